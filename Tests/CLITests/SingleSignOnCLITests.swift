import Foundation
import Platform
import TestSupport
import Testing

/// Single sign-on as a user runs it (issue 41): the real `sessionkeeper` against a real `demo-site` process
/// with its identity provider on 127.0.0.2, through the shipped `sites/example-sso.yaml`. Both hosts set
/// `demo_session` and `demo_csrf`, as an app and its provider built on Django set `sessionid` and `csrftoken`.
@Suite(.serialized) struct SingleSignOnCLITests {
    static let password = "Ch3shire-Gr1n_sso"
    /// A demo token: 256 random bits as unpadded base64url (sessions, CSRF nonces, codes, states are all built so).
    static let tokenShape = #"[A-Za-z0-9_-]{43}"#

    @Test func cookieSitePrintsTheAppsSessionOnlyAndItOpensThePrivatePage() async throws {
        try await SSOWorld.with { world in
            let login = try await world.run(["login", "sso", "-v"])
            #expect(login.status == 0, "stderr: \(login.stderr)")
            #expect(login.stdout.contains("logged in to sso: demo_session until "), "\(login.stdout)")
            // Both hosts' demo_session were stored, each named with its host.
            #expect(login.stderr.contains("demo_session (127.0.0.1)") && login.stderr.contains("demo_session (127.0.0.2)"), "\(login.stderr)")

            // No daemon runs: from the vault, with a note on stderr. One demo_session, the app's.
            let header = try await world.run(["cookie", "sso"])
            #expect(header.status == 0, "stderr: \(header.stderr)")
            let line = header.stdout.trimmingCharacters(in: .newlines)
            let names = line.split(separator: ";").map { $0.split(separator: "=").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
            #expect(names.filter { $0 == "demo_session" }.count == 1, "\(names)")
            #expect(try await world.app(accepts: line))

            // Formats with domains keep every host: two demo_session lines in the Netscape file.
            let netscape = try await world.run(["cookie", "sso", "--format", "netscape"])
            let sessionLines = netscape.stdout.split(separator: "\n").filter { $0.contains("\tdemo_session\t") }
            #expect(sessionLines.count == 2, "\(netscape.stdout.split(separator: "\n").map { $0.split(separator: "\t").prefix(6) })")
            // --url names the provider: its session alone.
            let provider = try await world.run(["cookie", "sso", "--url", "http://127.0.0.2:\(world.providerPort)/"])
            #expect(provider.stdout.components(separatedBy: "demo_session=").count == 2)
            #expect(provider.stdout != header.stdout)

            // The next login keeps the provider's session (a bare essential name is the app's): no form, no consent.
            let again = try await world.run(["login", "sso", "-v"])
            #expect(again.status == 0, "stderr: \(again.stderr)")
            #expect(again.stderr.contains("reached what login.done_when describes"), "\(again.stderr)")
            #expect(!again.stderr.contains("POST "), "\(again.stderr)")
            #expect(try await world.stats() == ["provider_logins": 1, "consents": 1])

            // --fresh: the provider's form again, its consent remembered.
            let fresh = try await world.run(["login", "sso", "-v", "--fresh"])
            #expect(fresh.status == 0, "stderr: \(fresh.stderr)")
            #expect(try await world.stats() == ["provider_logins": 2, "consents": 1])

            // The same flow without done_when (another site, so from an empty jar): the consent step, not needed
            // any more, is skipped, and login -v says so.
            let site = try String(contentsOfFile: world.folder.path("sites/sso.yaml"), encoding: .utf8)
            try site.replacingOccurrences(of: "  done_when: {url_matches: \"/account$\", body_contains: \"Welcome, alice\"}\n", with: "")
                .write(toFile: world.folder.path("sites/sso2.yaml"), atomically: true, encoding: .utf8)
            let skipping = try await world.run(["login", "sso2", "-v"])
            #expect(skipping.status == 0, "stderr: \(skipping.stderr)")
            #expect(skipping.stderr.contains("[3/3] consent: skipped, the previous response does not meet its when: expected "), "\(skipping.stderr)")
            #expect(try await world.stats() == ["provider_logins": 3, "consents": 1])
        }
    }

    @Test func theVeryVerboseTranscriptHoldsNoCodeStateOrToken() async throws {
        try await SSOWorld.with { world in
            let run = try await world.run(["login", "sso", "-vv"])
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let transcript = run.stdout + run.stderr
            // The chain really went through the provider's code and state, the CSRF fields and the session cookies...
            #expect(transcript.contains("code=•••") && transcript.contains("state=•••"), "\(transcript)")
            #expect(transcript.contains("name=\"csrf\" value=\"•••\""), "\(transcript)")
            // ...and not one token's value is there: no code, state, CSRF nonce, session id.
            let leaks = transcript.ranges(of: try Regex(Self.tokenShape)).map { String(transcript[$0]) }
            #expect(leaks.isEmpty, "\(leaks)")
            #expect(!transcript.contains(Self.password))

            // probe -vv: the check's trace masks the user's name as the login's does.
            let probe = try await world.run(["probe", "sso", "-vv"])
            #expect(probe.status == 0, "stderr: \(probe.stderr)")
            #expect(probe.stderr.contains("Welcome, •••"), "\(probe.stderr)")
            #expect(!(probe.stdout + probe.stderr).contains("Welcome, alice"))
        }
    }
}

extension SingleSignOnCLITests {
    @Test func aStepThatFailsAfterSkippedOnesStoresNothing() async throws {
        try await SSOWorld.with { world in
            #expect(try await world.run(["login", "sso"]).status == 0)
            let before = try await world.run(["cookie", "sso", "--format", "json"]).stdout

            // Without done_when and with a last step that cannot pass: the provider's form and the consent are
            // skipped (its session kept, the consent remembered), then the last step fails.
            let path = world.folder.path("sites/sso.yaml")
            let site = try String(contentsOfFile: path, encoding: .utf8)
            let broken = site.replacingOccurrences(of: "  done_when: {url_matches: \"/account$\", body_contains: \"Welcome, alice\"}\n", with: "")
                .replacingOccurrences(of: "      form: {allow: Authorize}\n", with: """
                          form: {allow: Authorize}
                        - name: settings
                          get: /account
                          expect: {body_contains: Settings saved}

                    """)
            try broken.write(toFile: path, atomically: true, encoding: .utf8)
            let failed = try await world.run(["login", "sso", "-v"])
            #expect(failed.status == 1, "stderr: \(failed.stderr)")
            #expect(failed.stderr.contains("provider sign-in: skipped") && failed.stderr.contains("consent: skipped"), "\(failed.stderr)")
            #expect(failed.stderr.contains("site 'sso', step 'settings'"), "\(failed.stderr)")
            // The stored session is the one before: a failed login never stores one.
            let after = try await world.run(["cookie", "sso", "--format", "json"]).stdout
            let unchanged = before == after && !before.isEmpty
            #expect(unchanged)
        }
    }
}

/// A folder with config.yaml and `sites/sso.yaml` (the shipped example, enabled, pointed at the demo site), and
/// a demo-site process with its identity provider on 127.0.0.2.
final class SSOWorld {
    let folder: TemporaryFolder
    let port: Int
    let providerPort: Int
    private let demo: RunningChild

    private init(folder: TemporaryFolder, port: Int, providerPort: Int, demo: RunningChild) {
        self.folder = folder
        self.port = port
        self.providerPort = providerPort
        self.demo = demo
    }

    static func with(_ body: (SSOWorld) async throws -> Void) async throws {
        let demoBinary = try #require(builtProgram("demo-site", override: "DEMO_SITE_BINARY"), "demo-site was not built beside the tests")
        let folder = try TemporaryFolder()
        let portFile = folder.path("demo.port")
        let demo = try await startProgram(
            demoBinary,
            ["--host", "127.0.0.1", "--port", "0", "--port-file", portFile, "--idp-host", "127.0.0.2", "--idp-port", "0"],
            environment: ["DEMO_PASSWORD": SingleSignOnCLITests.password, "PATH": "/usr/bin:/bin"], standardError: .discarded)
        demo.closeInput()
        var port: Int?
        let listening = try await waitUntil(.seconds(20)) {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return port != nil || !demo.isRunning
        }
        guard listening, let port else {
            _ = await demo.stop(grace: .seconds(5))
            folder.cleanUp()
            throw CLIWorldError(message: "demo-site did not report its port")
        }
        // The provider's port, as the app's sign-in link sends a browser there.
        let redirect = try await runProgram(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{redirect_url}", "http://127.0.0.1:\(port)/oidc/start"], standardError: .inherited)
        let providerPort = URLComponents(string: redirect.outputText)?.port ?? 0
        let world = SSOWorld(folder: folder, port: port, providerPort: providerPort, demo: demo)
        do {
            try #require(providerPort > 0, "no provider in \(redirect.outputText)")
            try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
            try "state_dir: state\nvault: {key: {file: state/master.key}}\n".write(toFile: folder.path("config.yaml"), atomically: true, encoding: .utf8)
            let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let shipped = try String(contentsOf: repository.appendingPathComponent("sites/example-sso.yaml"), encoding: .utf8)
            try shipped.replacingOccurrences(of: "base_url: http://127.0.0.1:8480", with: "base_url: http://127.0.0.1:\(port)")
                .replacingOccurrences(of: "enabled: false", with: "enabled: true")
                .write(toFile: folder.path("sites/sso.yaml"), atomically: true, encoding: .utf8)
            try await body(world)
        } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    func stop() async {
        _ = await demo.stop(grace: .seconds(5))
        folder.cleanUp()
    }

    /// `sessionkeeper ARGS... --config CONFIG` with DEMO_PASSWORD set, and no daemon's socket.
    func run(_ arguments: [String]) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable)
        let result = try await runProgram(
            binary.path, arguments + ["--config", folder.path("config.yaml")],
            environment: ["PATH": "/usr/bin:/bin", "HOME": folder.url.path, "DEMO_PASSWORD": SingleSignOnCLITests.password],
            directory: folder.url.path)
        return CLIRunner.Output(result)
    }

    /// Whether the app's private page opens with this Cookie header (curl, the header on its standard input).
    func app(accepts header: String) async throws -> Bool {
        let result = try await runProgram(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "@-", "http://127.0.0.1:\(port)/account"],
            input: Data("Cookie: \(header)\n".utf8), standardError: .inherited)
        return result.outputText == "200"
    }

    /// The provider's counters from `/_control/stats`.
    func stats() async throws -> [String: Int] {
        let result = try await runProgram("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/_control/stats"], standardError: .inherited)
        let object = try JSONSerialization.jsonObject(with: Data(result.outputText.utf8)) as? [String: Any] ?? [:]
        return ["provider_logins": object["provider_logins"] as? Int ?? -1, "consents": object["consents"] as? Int ?? -1]
    }
}
