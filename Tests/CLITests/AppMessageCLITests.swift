import Foundation
import Platform
import TestSupport
import Testing

/// Issue 40: a refused login shows the app's own message (the demo site's `<p class="error" role="alert">`) in
/// `login`, in the daemon's log, in `status`, `status SITE` and `status --json`; `status` exits 1 while a site needs
/// attention.
@Suite struct AppMessageCLITests {
    static let message = "Invalid username or password"

    @Test func aRefusedLoginShowsTheSitesMessageEverywhere() async throws {
        try await LoginCLIWorld.with { world in
            let login = try await world.login([], site: "demo-bad")
            #expect(login.status == 1)
            #expect(login.stderr.contains(#"the site says "\#(Self.message)""#), "\(login.stderr)")
            #expect(!login.stderr.contains("<!DOCTYPE"), "not the page's head")

            let daemon = try await RunCLITests.startDaemon(world, environment: ["WRONG_PASSWORD": "wrong-\(UUID().uuidString)"])
            let refused = await RunCLITests.eventually { daemon.outputText.contains("site=demo-bad") && daemon.outputText.contains(Self.message) }
            #expect(refused, "daemon log: \(daemon.outputText)")
            let settled = try await waitUntil(.seconds(30)) {
                let listed = try? await world.run(["status", "--json", "--config", world.configPath])
                return listed?.stdout.contains(#""state":"needs-attention""#) == true && listed?.stdout.contains(#""state":"valid""#) == true
            }
            #expect(settled, "demo-bad needs attention and demo is served")

            let table = try await world.run(["status", "--config", world.configPath])
            #expect(table.status == 1, "a site needs attention: \(table.stdout) \(table.stderr)")
            let badRow = table.stdout.split(separator: "\n").first { $0.hasPrefix("demo-bad ") }
            #expect(badRow?.contains(Self.message) == true, "\(table.stdout)")
            #expect(badRow?.contains("site 'demo-bad'") == false, "the row names the site once")

            // On a terminal of 80 columns the table fits: the last error is cut to the room left, ending in "…".
            let binary = try #require(CLIRunner.executable).path
            let narrow = try await runProgram(
                "/usr/bin/script", ["-qec", "stty cols 80 && '\(binary)' status --config '\(world.configPath)'", "/dev/null"],
                environment: ["PATH": "/usr/bin:/bin", "HOME": world.folder.path], directory: world.folder.path)
            let rows = narrow.outputText.replacingOccurrences(of: "\r", with: "").split(separator: "\n").filter { !$0.isEmpty }
            let narrowBad = rows.first { $0.hasPrefix("demo-bad ") }
            #expect(narrowBad?.count == 80 && narrowBad?.hasSuffix("…") == true, "\(rows)")
            #expect(rows.filter { $0.hasPrefix("SITE") || $0.hasPrefix("demo ") }.allSatisfy { $0.count <= 80 }, "\(rows)")

            let json = try await world.run(["status", "--json", "--config", world.configPath])
            #expect(json.status == 1)
            #expect(json.stdout.contains(Self.message), "\(json.stdout)")

            let one = try await world.run(["status", "demo-bad", "--config", world.configPath])
            #expect(one.status == 1)
            #expect(one.stdout.contains("state:       needs-attention"), "\(one.stdout)")
            #expect(one.stdout.contains("last error:  site 'demo-bad', step 'submit'"), "\(one.stdout)")
            #expect(one.stdout.contains(Self.message))

            // While it needs attention its cookies are refused in one sentence that names the site once.
            let cookie = try await world.run(["cookie", "demo-bad", "--config", world.configPath])
            #expect(cookie.status == 1)
            #expect(cookie.stderr.hasPrefix("sessionkeeper: site 'demo-bad' has no session to serve: "), "\(cookie.stderr)")
            #expect(cookie.stderr.components(separatedBy: "site 'demo-bad'").count == 3, "named once, and once in the error it quotes: \(cookie.stderr)")

            let healthy = try await world.run(["status", "demo", "--config", world.configPath])
            #expect(healthy.status == 0, "\(healthy.stdout) \(healthy.stderr)")

            #expect(await RunCLITests.stop(daemon) == 0)
            for output in [login.stderr, table.stdout, json.stdout, one.stdout, daemon.outputText] {
                #expect(!output.contains(LoginCLITests.password))
            }
        }
    }
}
