import CookieJar
import Foundation
import Platform
import TestSupport
import Testing

/// `sessionkeeper login` as a user runs it: the real executable against a real `demo-site` process on
/// 127.0.0.1, with a temporary config.yaml, site file and state folder (vault with a key file).
@Suite(.serialized) struct LoginCLITests {
    /// The demo site's password in these tests: distinctive, so a leak anywhere is found by a plain search.
    static let password = "Wh1te-Rabbit_0bscura"

    @Test func loginSucceedsStoresTheVaultItemAndWritesTheJar() async throws {
        try await LoginCLIWorld.with { world in
            let jar = world.folder.path("out.json")
            let run = try await world.login(["--jar", jar])
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let lastLine = try #require(run.stdout.split(separator: "\n").last.map(String.init))
            #expect(lastLine.hasPrefix("logged in to demo: demo_session until "))
            #expect(RFC3339Check.isTime(String(lastLine.dropFirst("logged in to demo: demo_session until ".count))))
            // Each request is shown as it happens: method, URL, status, milliseconds.
            #expect(run.stderr.range(of: #"GET http://127\.0\.0\.1:\d+/login 200 \d+ ms"#, options: .regularExpression) != nil)
            #expect(run.stderr.range(of: #"POST http://127\.0\.0\.1:\d+/login 303 \d+ ms"#, options: .regularExpression) != nil)

            // The jar file: lossless json, private, holding the session the demo site accepts.
            let attributes = try FileManager.default.attributesOfItem(atPath: jar)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let cookies = try CookieCodec.decode(String(contentsOfFile: jar, encoding: .utf8), as: .json, url: nil, now: Date())
            let session = try #require(cookies.first { $0.name == "demo_session" })
            #expect(session.domain == "127.0.0.1" && session.hostOnly && session.httpOnly && session.expires != nil)
            #expect(try await world.demoAccepts(sessionValue: session.value))

            // The vault item exists (one encrypted file besides the keyring), named by a keyed hash.
            let items = try world.vaultFiles()
            #expect(items.count == 1)
            #expect(items.allSatisfy { $0.count == 64 && $0.allSatisfy(\.isHexDigit) })

            // A Netscape jar when the name is not .json.
            let text = world.folder.path("out.txt")
            let second = try await world.login(["--jar", text])
            #expect(second.status == 0, "stderr: \(second.stderr)")
            let netscape = try String(contentsOfFile: text, encoding: .utf8)
            #expect(netscape.contains("\tdemo_session\t"))
        }
    }

    @Test func wrongPasswordFailsWithSiteAndStep() async throws {
        try await LoginCLIWorld.with { world in
            let run = try await world.login(["--fresh"], password: "not-the-password")
            #expect(run.status == 1)
            #expect(run.stderr.contains("site 'demo', step 'submit'"))
            #expect(run.stderr.contains("expected status 303, found status 200"))
            #expect(!run.stderr.contains("not-the-password") && !run.stdout.contains("not-the-password"))
            // Nothing stored for a failed login.
            #expect(try world.vaultFiles().isEmpty)
        }
    }

    @Test func configurationErrorsExitTwoWithFileLineColumn() async throws {
        try await LoginCLIWorld.with { world in
            let site = world.folder.path("sites/demo.yaml")
            let original = try String(contentsOfFile: site, encoding: .utf8)
            try (original + "enabeld: true\n").write(toFile: site, atomically: true, encoding: .utf8)
            let run = try await world.login([])
            #expect(run.status == 2)
            let expectedPrefix = "\(site):\(original.split(separator: "\n", omittingEmptySubsequences: false).count):1: error: unknown key 'enabeld'"
            #expect(run.stderr.contains(expectedPrefix), "stderr: \(run.stderr)")

            // An unknown site and a bad option are usage errors too.
            try original.write(toFile: site, atomically: true, encoding: .utf8)
            let unknown = try await world.login([], site: "nosuchsite")
            #expect(unknown.status == 2)
            #expect(unknown.stderr.contains("no site named 'nosuchsite'"))
            let badOption = try await world.run(["login", "demo", "--config", world.configPath, "--no-such-flag"])
            #expect(badOption.status == 2)
        }
    }

    @Test func verboseSaysWhatWasRestoredAndStoredByNameOnly() async throws {
        try await LoginCLIWorld.with { world in
            let first = try await world.login(["--verbose"])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            #expect(first.stderr.contains("no stored session for demo in the vault"))
            #expect(first.stderr.contains("[1/2] login page"))
            #expect(first.stderr.contains("step 'submit' done in "))
            #expect(first.stderr.contains("stored 2 cookie(s) in the vault (demo_csrf, demo_session)"))

            let second = try await world.login(["--verbose"])
            #expect(second.status == 0, "stderr: \(second.stderr)")
            // keep_on_login's default: every stored cookie but the essential demo_session.
            #expect(second.stderr.contains("restored 1 cookie(s) from the vault (demo_csrf); left out 1 by cookies.keep_on_login"))

            let fresh = try await world.login(["--verbose", "--fresh"])
            #expect(fresh.stderr.contains("starting with an empty jar (--fresh)"))
            #expect(!fresh.stderr.contains("restored"))
        }
    }

    @Test func sessionCookiesAreLeftOutOfTheVaultWhenTheSiteSaysSo() async throws {
        try await LoginCLIWorld.with { world in
            let site = world.folder.path("sites/demo.yaml")
            let text = try String(contentsOfFile: site, encoding: .utf8)
                .replacingOccurrences(of: "accept: main-document-domain", with: "accept: main-document-domain\n  persist_session_cookies: false")
            try text.write(toFile: site, atomically: true, encoding: .utf8)
            let run = try await world.login(["--verbose"])
            #expect(run.status == 0, "stderr: \(run.stderr)")
            // demo_csrf is a session cookie (no Max-Age): left out; demo_session has a Max-Age: kept.
            #expect(run.stderr.contains("stored 1 cookie(s) in the vault (demo_session); left out 1 expired or session cookie(s)"))
            let again = try await world.login(["--verbose"])
            #expect(again.stderr.contains("restored 0 cookie(s) from the vault; left out 1 by cookies.keep_on_login"))
        }
    }

    @Test func insecureTLSWarningMissingSecretAndDamagedVaultItem() async throws {
        try await LoginCLIWorld.with { world in
            let site = world.folder.path("sites/demo.yaml")
            let original = try String(contentsOfFile: site, encoding: .utf8)

            // http.insecure: the warning is printed at every login.
            try (original + "http: {insecure: true}\n").write(toFile: site, atomically: true, encoding: .utf8)
            let insecure = try await world.login([])
            #expect(insecure.status == 0, "stderr: \(insecure.stderr)")
            #expect(insecure.stderr.contains("sessionkeeper: warning: TLS certificate verification is disabled (http.insecure)"))

            // A damaged session item is reported (naming the item, not its content) and the login starts
            // from an empty jar, then replaces the item.
            let item = try #require(try world.vaultFiles().first)
            let path = world.folder.path("state/vault/\(item)")
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count - 5] ^= 0x01
            try bytes.write(to: URL(fileURLWithPath: path))
            let damaged = try await world.login(["--verbose"])
            #expect(damaged.status == 0, "stderr: \(damaged.stderr)")
            #expect(damaged.stderr.contains("warning: cannot read the stored session, logging in from an empty jar"))
            #expect(damaged.stderr.contains("site state 'demo'"), "stderr: \(damaged.stderr)")
            let repaired = try await world.login(["--verbose"])
            #expect(repaired.stderr.contains("restored 1 cookie(s) from the vault"))

            // A credential that is not in the vault is a configuration error found before any request
            // (exit 2), saying which secret and how to add it, naming the site and credential once.
            try original.replacingOccurrences(of: "{env: DEMO_PASSWORD}", with: "{secret: demo/absent}")
                .write(toFile: site, atomically: true, encoding: .utf8)
            let missing = try await world.login(["--fresh"])
            #expect(missing.status == 2)
            #expect(missing.stderr.components(separatedBy: "site 'demo'").count == 2, "stderr: \(missing.stderr)")
            #expect(missing.stderr.contains("credential 'password' is not available: secret 'demo/absent' is not in the vault"), "stderr: \(missing.stderr)")
            #expect(!missing.stderr.contains("GET "), "no request was sent: \(missing.stderr)")
        }
    }

    /// On a terminal the current step is shown as a progress line rewritten in place (`script` gives the
    /// command a pseudo-terminal); the request lines and the final line still appear.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a pseudo-terminal"))
    func progressLineOnATerminal() async throws {
        try await LoginCLIWorld.with { world in
            let binary = try #require(CLIRunner.executable).path
            let command = "\(binary) login demo --config \(world.configPath)"
            let run = try await world.runTool("/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["DEMO_PASSWORD": LoginCLITests.password])
            #expect(run.status == 0, "output: \(run.stdout)")
            #expect(run.stdout.contains("\r\u{1B}[K[1/2] login page …"))
            #expect(run.stdout.contains("logged in to demo: demo_session until "))
            #expect(!run.stdout.contains(LoginCLITests.password))
        }
    }

    /// Issue 5's secrecy test: a full login, then a second run that restores the session from the vault
    /// (a restart), then every byte the project wrote — stdout and stderr of every run, every file in the
    /// state folder, the config folder and the jar files — is searched for the password and every cookie value.
    /// The jar files are deliberately plaintext cookies (that is what `--jar` is for), so they are left out
    /// of the cookie-value search, but not out of the password search.
    @Test func noPasswordOrCookieValueIsWrittenInClear() async throws {
        try await LoginCLIWorld.with(passwordFromVault: true) { world in
            let firstJar = world.folder.path("first.json"), secondJar = world.folder.path("second.txt")
            let first = try await world.login(["--verbose", "--jar", firstJar])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            let second = try await world.login(["--verbose", "--jar", secondJar])
            #expect(second.status == 0, "stderr: \(second.stderr)")
            #expect(second.stderr.contains("restored 1 cookie(s) from the vault"))
            let failed = try await world.login(["--verbose"], site: "demo-bad")
            #expect(failed.status == 1)

            var cookieValues = Set<String>()
            for cookie in try CookieCodec.decode(String(contentsOfFile: firstJar, encoding: .utf8), as: .json, url: nil, now: Date()) {
                cookieValues.insert(cookie.value)
            }
            for cookie in try CookieCodec.decode(String(contentsOfFile: secondJar, encoding: .utf8), as: .netscape, url: nil, now: Date()) {
                cookieValues.insert(cookie.value)
            }
            #expect(cookieValues.count >= 3, "two logins give two sessions and CSRF tokens")
            #expect(cookieValues.allSatisfy { $0.count >= 16 })

            var outputs: [(String, Data)] = []
            for (index, run) in [first, second, failed].enumerated() {
                outputs.append(("stdout of run \(index + 1)", Data(run.stdout.utf8)))
                outputs.append(("stderr of run \(index + 1)", Data(run.stderr.utf8)))
            }
            let jars = Set([firstJar, secondJar])
            let files = try world.everyFile()
            #expect(files.contains { $0.hasSuffix("/keyring") } && files.contains { $0.hasSuffix("/master.key") })
            for file in files { outputs.append((file, try Data(contentsOf: URL(fileURLWithPath: file)))) }

            let passwordForms = [Self.password, Self.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!]
            for (name, bytes) in outputs {
                for form in passwordForms {
                    #expect(bytes.range(of: Data(form.utf8)) == nil, "the password appears in \(name)")
                }
                if jars.contains(name) { continue }
                for value in cookieValues {
                    #expect(bytes.range(of: Data(value.utf8)) == nil, "a cookie value appears in \(name)")
                }
            }
        }
    }
}

/// A temporary world for one test: a folder with config.yaml, sites/, state/, and a running demo-site.
final class LoginCLIWorld {
    let folder: TemporaryFolder
    let port: Int
    private let demo: RunningChild
    var configPath: String { folder.path("config.yaml") }

    private init(folder: TemporaryFolder, port: Int, demo: RunningChild) {
        self.folder = folder
        self.port = port
        self.demo = demo
    }

    /// Starts demo-site (waiting for its port file) and writes the config and site files.
    private static func start(passwordFromVault: Bool) async throws -> LoginCLIWorld {
        let demoBinary = try #require(builtProgram("demo-site", override: "DEMO_SITE_BINARY"), "demo-site was not built beside the tests")

        let folder = try TemporaryFolder()
        let portFile = folder.path("demo.port")
        let demo: RunningChild
        do {
            demo = try await startProgram(
                demoBinary, ["--host", "127.0.0.1", "--port", "0", "--port-file", portFile],
                environment: ["DEMO_PASSWORD": LoginCLITests.password, "PATH": "/usr/bin:/bin"], standardError: .discarded)
        } catch {
            folder.cleanUp()
            throw error
        }
        demo.closeInput()
        var found: Int?
        for _ in 0..<200 where found == nil && demo.isRunning {
            found = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if found == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let world: LoginCLIWorld
        do {
            guard let found else { throw CLIWorldError(message: "demo-site did not report its port") }
            world = LoginCLIWorld(folder: folder, port: found, demo: demo)
            try await world.writeFiles(passwordFromVault: passwordFromVault)
        } catch {
            await stop(demo)
            folder.cleanUp()
            throw error
        }
        return world
    }

    private func writeFiles(passwordFromVault: Bool) async throws {
        try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
        try """
            state_dir: state
            vault: {key: {file: state/master.key}}
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let passwordSource = passwordFromVault ? "{secret: demo/password}" : "{env: DEMO_PASSWORD}"
        try Self.siteYAML(port: port, passwordSource: passwordSource).write(toFile: folder.path("sites/demo.yaml"), atomically: true, encoding: .utf8)
        // The same site with a password that is wrong on purpose, for the failure path of the secrecy test.
        try Self.siteYAML(port: port, passwordSource: "{env: WRONG_PASSWORD}").write(toFile: folder.path("sites/demo-bad.yaml"), atomically: true, encoding: .utf8)
        if passwordFromVault {
            let stored = try await run(["secret", "set", "demo/password", "--config", configPath], stdin: Data(LoginCLITests.password.utf8))
            try #require(stored.status == 0, "secret set failed: \(stored.stderr)")
        }
    }

    /// Runs `body` with a fresh world and always stops the demo site and removes the folder afterwards.
    static func with(passwordFromVault: Bool = false, _ body: (LoginCLIWorld) async throws -> Void) async throws {
        let world = try await start(passwordFromVault: passwordFromVault)
        do {
            try await body(world)
        } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    /// Stops demo-site (see `stop(_:)`) and removes the folder.
    func stop() async {
        await Self.stop(demo)
        folder.cleanUp()
    }

    /// SIGTERM, then SIGKILL when demo-site has not exited five seconds later.
    private static func stop(_ demo: RunningChild) async {
        _ = await demo.stop(grace: .seconds(5))
    }

    static func siteYAML(port: Int, passwordSource: String) -> String {
        """
        base_url: http://127.0.0.1:\(port)
        credentials:
          username: alice
          password: \(passwordSource)
        login:
          steps:
            - name: login page
              get: /login
              expect: {status: 200}
              extract:
                csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}
            - name: submit
              post: /login
              form:
                username: "{{ credentials.username }}"
                password: "{{ credentials.password }}"
                csrf: "{{ csrf }}"
              follow_redirects: false
              expect:
                status: 303
                cookie: demo_session
        check:
          get: /api/me
          expect: {status: 200, json: {path: /user/name, equals: alice}}
        cookies:
          essential: [demo_session]
          accept: main-document-domain

        """
    }

    /// `sessionkeeper login SITE --config CONFIG ARGS...`, with DEMO_PASSWORD set to `password`.
    func login(_ arguments: [String], site: String = "demo", password: String = LoginCLITests.password) async throws -> CLIRunner.Output {
        try await run(["login", site, "--config", configPath] + arguments, environment: ["DEMO_PASSWORD": password, "WRONG_PASSWORD": "wrong-\(UUID().uuidString)"])
    }

    func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable)
        let result = try await runProgram(
            binary.path, arguments, environment: ["PATH": "/usr/bin:/bin", "HOME": folder.url.path].merging(environment) { $1 },
            directory: folder.url.path, input: stdin)
        return CLIRunner.Output(result)
    }

    /// Runs any tool in the world's folder with the given environment (for `script`); standard error is
    /// merged into `stdout`.
    func runTool(_ path: String, _ arguments: [String], environment: [String: String]) async throws -> CLIRunner.Output {
        let result = try await runProgram(
            path, arguments,
            environment: ["PATH": "/usr/bin:/bin", "HOME": folder.url.path, "TERM": "dumb"].merging(environment) { $1 },
            directory: folder.url.path, standardError: .mergedWithOutput)
        return CLIRunner.Output(status: result.status, stdout: result.outputText, stderr: "")
    }

    /// The item files of the vault (everything but the keyring).
    func vaultFiles() throws -> [String] {
        let folderPath = folder.path("state/vault")
        guard FileManager.default.fileExists(atPath: folderPath) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folderPath).filter { $0 != "keyring" }
    }

    /// Every regular file under the world's folder (config, sites, state, jars), by absolute path.
    func everyFile() throws -> [String] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: folder.url.path))
        var files: [String] = []
        while let relative = enumerator.nextObject() as? String {
            let path = folder.path(relative)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
        return files
    }

    /// Whether the demo site's /api/me accepts this session cookie: asked with the curl tool, the Cookie
    /// header passed on its standard input (`-H @-`) so the value is never on a command line.
    func demoAccepts(sessionValue: String) async throws -> Bool {
        let result = try await runProgram(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "@-", "http://127.0.0.1:\(port)/api/me"],
            input: Data("Cookie: demo_session=\(sessionValue)\n".utf8), standardError: .inherited)
        return result.outputText == "200"
    }
}

struct CLIWorldError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

enum RFC3339Check {
    static func isTime(_ text: String) -> Bool {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text) != nil
    }
}
