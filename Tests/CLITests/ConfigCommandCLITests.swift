import Foundation
import JSON
import Platform
import Testing
import TestSupport

/// `sessionkeeper config` (what a client in another language asks instead of reading config.yaml), and the one
/// refusal the store backend makes for the CLI: `login` and `probe` outside a fleet's leases.
@Suite struct ConfigCommandCLITests {
    private func run(_ arguments: [String], in folder: TemporaryFolder) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable)
        return CLIRunner.Output(try await runProgram(
            binary.path, arguments, environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path], directory: folder.path))
    }

    @Test func configAnswersTheConfigFileTheSocketAndTheDaemonsUser() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try folder.write("sites_dir: sites\nstate_dir: var/state\nsocket: {path: run/sk.sock}\n", to: "config.yaml")

        // No state folder yet: no daemon's user.
        let before = try await run(["config", "--json"], in: folder)
        #expect(before.status == 0, "\(before.stderr)")
        let answer = try JSONValue.parse(Array(before.stdout.utf8))
        #expect(answer["config"] == .string(folder.path("config.yaml")))
        #expect(answer["socket"] == .string(folder.path("run/sk.sock")))
        #expect(answer["state_dir"] == .string(folder.path("var/state")))
        #expect(answer["daemon_uid"] == .null)

        try FileManager.default.createDirectory(atPath: folder.path("var/state"), withIntermediateDirectories: true)
        let after = try await run(["config", "--json"], in: folder)
        #expect(try JSONValue.parse(Array(after.stdout.utf8))["daemon_uid"] == .number(String(Syscall.userID)))
        let text = try await run(["config"], in: folder)
        #expect(text.stdout == "config: \(folder.path("config.yaml"))\nsocket: \(folder.path("run/sk.sock"))\n"
            + "state_dir: \(folder.path("var/state"))\ndaemon_uid: \(Syscall.userID)\n")
    }

    @Test func configWithoutAConfigFileSaysWhereItLookedAndExits2() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let missing = try await run(["config", "--json"], in: folder)
        #expect(missing.status == 2 && missing.stdout.isEmpty)
        #expect(missing.stderr.contains("no config file found (looked at \(folder.path("config.yaml"))"), "\(missing.stderr)")
        try folder.write("socket: /run/sk.sock\n", to: "config.yaml")
        let unreadable = try await run(["config", "--json"], in: folder)
        #expect(unreadable.status == 2)
        #expect(unreadable.stderr.contains("\(folder.path("config.yaml")):1:9: error: socket: expected a mapping"), "\(unreadable.stderr)")
    }

    @Test func loginAndProbeAreRefusedUnderAFleetsLeases() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        // The database is never reached: the refusal comes before the store is opened.
        try folder.write("sites_dir: sites\nstate_dir: state\nstore:\n  postgres:\n    url: postgres://keeper@127.0.0.1:1/sk\n", to: "config.yaml")
        try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
        try folder.write(
            "name: demo\nbase_url: http://127.0.0.1:9/\nlogin:\n  steps:\n    - request: {method: GET, url: /}\n"
                + "check:\n  request: {method: GET, url: /}\n  expect: {status: 200}\n", to: "sites/demo.yaml")
        for command in ["login", "probe"] {
            let refused = try await run([command, "demo"], in: folder)
            #expect(refused.status == 2, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("`login` and `probe` would run outside the fleet's leases"), "\(command): \(refused.stderr)")
        }
    }
}
