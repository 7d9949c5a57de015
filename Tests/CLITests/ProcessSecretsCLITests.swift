import Foundation
import TestSupport
import Testing

/// docs/SECURITY.md, "Secrets stay in the process", seen from outside a running daemon: started as `nobody`
/// (through `setpriv`) with its vault passphrase in `SK_TEST_VAULT_PASSPHRASE`, after its first login (which
/// ran a credential command and a plugin) its `/proc/PID/environ` holds no passphrase, its `/proc/PID` files
/// belong to root (the kernel's sign of a non-dumpable process), `nobody` itself cannot read its environment,
/// its vault keys sit in mappings core files leave out, and neither the credential command nor the plugin saw
/// the variable.
@Suite(.serialized) struct ProcessSecretsCLITests {
    static let variable = "SK_TEST_VAULT_PASSPHRASE"
    static let passphrase = "correct-horse-7Battery"
    static let setpriv = "/usr/bin/setpriv"

    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv to run the daemon as nobody"))
    func aRunningDaemonKeepsItsPassphraseAndMemoryToItself() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let root = folder.path
        // The daemon runs as nobody: it reads root's files (trusted as code), and writes only state/ and probe/.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root)
        for name in ["sites", "plugins", "state", "probe"] {
            try FileManager.default.createDirectory(atPath: folder.path(name), withIntermediateDirectories: false)
            try FileManager.default.setAttributes([.posixPermissions: name == "state" ? 0o700 : 0o755], ofItemAtPath: folder.path(name))
        }
        for name in ["state", "probe"] {
            try FileManager.default.setAttributes([.ownerAccountID: 65534, .groupOwnerAccountID: 65534], ofItemAtPath: folder.path(name))
        }
        try "state_dir: state\nsites_dir: sites\nplugins_dir: plugins\nvault: {key: {passphrase_env: \(Self.variable)}}\n"
            .write(toFile: folder.path("config.yaml"), atomically: true, encoding: .utf8)
        // The plugin writes its environment down and answers with a session cookie.
        try folder.write("""
            #!/bin/sh
            cat > /dev/null
            env > \(folder.path("probe/plugin.env"))
            echo '{"protocol": 1, "set_cookie": ["probe_session=p1; Max-Age=3600; Path=/"]}'
            """, to: "plugins/probe.sh", mode: 0o755)
        try folder.write("""
            base_url: https://probe.invalid
            credentials:
              token: {command: [/bin/sh, -c, "env > \(folder.path("probe/command.env")); echo token-value"]}
            login:
              steps:
                - name: probe
                  plugin: probe.sh
                  with: {token: "{{ credentials.token }}"}
            cookies: {essential: [probe_session]}
            """, to: "sites/probe.yaml", mode: 0o644)

        let daemon = try await startProgram(
            Self.setpriv,
            ["--reuid=65534", "--regid=65534", "--clear-groups", try #require(CLIRunner.executable).path, "run", "--config", folder.path("config.yaml")],
            environment: ["PATH": "/usr/bin:/bin", "HOME": root, Self.variable: Self.passphrase, "LANG": "C.UTF-8"],
            directory: folder.path, standardError: .mergedWithOutput)
        daemon.closeInput()
        let pid = daemon.pid

        let loggedIn = await RunCLITests.eventually(within: .seconds(20)) { daemon.outputText.contains("outcome=ok run=login site=probe") }
        #expect(loggedIn, "daemon log: \(daemon.outputText)")

        // /proc/PID/environ shows the block laid out at execve: the passphrase's bytes are gone from it.
        let environ = try Self.readToEnd("/proc/\(pid)/environ")
        #expect(environ.range(of: Data(Self.passphrase.utf8)) == nil, "the passphrase is in /proc/PID/environ")
        #expect(environ.range(of: Data("\(Self.variable)=".utf8)) == nil)
        #expect(environ.range(of: Data("PATH=/usr/bin:/bin".utf8)) != nil, "the rest of the environment is there")

        // Non-dumpable: the kernel hands /proc/PID to root although the process runs as nobody.
        let status = String(decoding: try Self.readToEnd("/proc/\(pid)/status"), as: UTF8.self)
        #expect(status.contains("\nUid:\t65534\t65534\t65534\t65534\n"), "the daemon runs as nobody")
        let owner = try FileManager.default.attributesOfItem(atPath: "/proc/\(pid)/environ")[.ownerAccountID] as? NSNumber
        #expect(owner?.intValue == 0, "/proc/PID/environ belongs to uid \(owner.map { "\($0)" } ?? "?")")
        // And a process of the daemon's own uid cannot read it.
        let peek = try await runProgram(Self.setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/cat", "/proc/\(pid)/environ"])
        #expect(peek.status != 0)
        #expect(!peek.outputText.contains(Self.passphrase))

        // The vault's keys sit in mappings core files leave out (VmFlags "dd").
        let smaps = String(decoding: try Self.readToEnd("/proc/\(pid)/smaps"), as: UTF8.self)
        let excluded = smaps.split(separator: "\n").filter { $0.hasPrefix("VmFlags:") && $0.split(separator: " ").contains("dd") }
        #expect(!excluded.isEmpty, "no mapping of the daemon is left out of core files")

        // The credential command and the plugin ran, and saw no passphrase variable.
        for name in ["command.env", "plugin.env"] {
            let seen = try String(contentsOfFile: folder.path("probe/" + name), encoding: .utf8)
            #expect(seen.contains("PATH="), "\(name): \(seen.count) bytes")
            #expect(!seen.contains(Self.variable) && !seen.contains(Self.passphrase), "\(name) saw the passphrase variable")
        }

        #expect(await RunCLITests.stop(daemon) == 0)
        #expect(!daemon.outputText.contains(Self.passphrase))
    }

    /// A /proc file read to its end (it reports a size of 0, so a read sized by it would stop short).
    static func readToEnd(_ path: String) throws -> Data {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        return try handle.readToEnd() ?? Data()
    }
}
