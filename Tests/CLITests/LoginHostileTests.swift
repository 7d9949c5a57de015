import Foundation
import TestSupport
import Testing

/// `sessionkeeper login` against Fixtures/hostile_server.py on 127.0.0.1 (a site that is down, a
/// 200 KB header, cookies refused and evicted), and with missing credentials or a disabled site.
@Suite(.serialized) struct LoginHostileTests {
    static let password = "Hostile-Passw0rd_Unique"
    /// The cookie values the fixture sets: they must never be printed.
    static let cookieValues = ["Sess10nValue_9f8e7d6c5b4a", "Rememb3rValue_0a1b2c3d4e"]

    /// Runs `body` with a world whose sites point at a fresh hostile server, stopped afterwards.
    static func withServer(_ body: (HostileWorld, Int) async throws -> Void) async throws {
        let script = try #require(Bundle.module.url(forResource: "hostile_server", withExtension: "py", subdirectory: "Fixtures")).path
        let server = try await PythonServer.start(script: script)
        let world = try HostileWorld()
        defer { world.cleanUp() }
        do {
            try await body(world, server.port)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func requestsServed(_ port: Int) async throws -> Int {
        let result = try await runProgram("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/count"], standardError: .discarded)
        return Int(result.outputText) ?? -1
    }

    static func login(_ world: HostileWorld, _ site: String, _ arguments: [String] = []) async throws -> CLIRunner.Output {
        try await world.run(["login", site, "--config", world.configPath] + arguments, environment: ["HOSTILE_PASSWORD": password])
    }

    static func expectNoSecrets(_ run: CLIRunner.Output, sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in [password, password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!] + cookieValues {
            #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret), "a secret was printed", sourceLocation: sourceLocation)
        }
    }

    @Test func aSiteAnswering503FailsTheStep() async throws {
        try await Self.withServer { world, port in
            try world.write("sites/down.yaml", """
                base_url: http://127.0.0.1:\(port)
                login:
                  steps:
                    - name: front page
                      get: /down/login

                """)
            let run = try await Self.login(world, "down")
            #expect(run.status == 1)
            #expect(run.stderr.contains("site 'down', step 'front page'"), "\(run.stderr)")
            #expect(run.stderr.contains("expected a status below 400 (the step has no expect: status), found status 503"), "\(run.stderr)")
            #expect(!run.stdout.contains("logged in"))
            #expect(world.vaultItems().isEmpty, "nothing is stored for a failed login")
            HostileInputTests.expectNoInternalWords(run)
        }
    }

    @Test func aMissingCredentialFailsBeforeAnyRequest() async throws {
        try await Self.withServer { world, port in
            try world.write("sites/creds.yaml", """
                base_url: http://127.0.0.1:\(port)
                credentials:
                  username: alice
                  password: {env: HOSTILE_ABSENT_PASSWORD}
                login:
                  steps:
                    - name: login page
                      get: /login
                    - name: submit
                      post: /login
                      form: {user: "{{ credentials.username }}", pass: "{{ credentials.password }}"}
                      follow_redirects: false
                      expect: {status: 303}

                """)
            let run = try await Self.login(world, "creds")
            #expect(run.status == 2)
            let lines = run.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one sentence: \(run.stderr)")
            #expect(run.stderr.hasPrefix("sessionkeeper: site 'creds', step 'submit'"), "\(run.stderr)")
            #expect(run.stderr.components(separatedBy: "site 'creds'").count == 2, "the site is named once: \(run.stderr)")
            #expect(run.stderr.components(separatedBy: "credential 'password'").count == 2, "the credential is named once: \(run.stderr)")
            #expect(run.stderr.contains("environment variable HOSTILE_ABSENT_PASSWORD is not set"))
            #expect(try await Self.requestsServed(port) == 0, "no request before every credential is known")
            #expect(world.vaultItems().isEmpty)

            // An environment variable of a template that is not set fails the same way.
            try world.write("sites/envvar.yaml", """
                base_url: http://127.0.0.1:\(port)
                allow_env: [HOSTILE_UNSET_VARIABLE]
                login:
                  steps:
                    - name: first
                      get: /login
                    - name: second
                      get: "/home?x={{ env.HOSTILE_UNSET_VARIABLE }}"

                """)
            let env = try await Self.login(world, "envvar")
            #expect(env.status == 2)
            #expect(env.stderr.contains("environment variable HOSTILE_UNSET_VARIABLE is not set"), "\(env.stderr)")
            #expect(try await Self.requestsServed(port) == 0)
        }
    }

    @Test func aDisabledSiteIsRefusedNamingTheKey() async throws {
        try await Self.withServer { world, port in
            try world.write("sites/off.yaml", "base_url: http://127.0.0.1:\(port)\nlogin: {steps: [{get: /login}]}\nenabled: false\n")
            let run = try await Self.login(world, "off")
            #expect(run.status == 2)
            #expect(run.stderr.contains("site 'off' is disabled (enabled: false in "), "\(run.stderr)")
            #expect(run.stderr.contains("set enabled: true to log in"))
            #expect(try await Self.requestsServed(port) == 0)
        }
    }

    @Test func aHugeResponseHeaderIsExplained() async throws {
        try await Self.withServer { world, port in
            try world.write("sites/huge.yaml", "base_url: http://127.0.0.1:\(port)\nlogin: {steps: [{name: big, get: /huge-header}]}\n")
            let run = try await Self.login(world, "huge")
            #expect(run.status == 1)
            #expect(run.stderr.contains("site 'huge', step 'big'"), "\(run.stderr)")
            #expect(run.stderr.contains("the server sent response headers larger than libcurl accepts"), "\(run.stderr)")
            HostileInputTests.expectNoInternalWords(run)
        }
    }

    /// A plugin that never stops printing is killed at the output cap, long before its timeout, and the
    /// login says so in one line; nothing is stored.
    @Test func aRunawayPluginIsKilledAtTheOutputCap() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.write("plugins/flood.sh", "#!/bin/sh\nexec cat /dev/zero\n")
        chmod(world.folder.path("plugins/flood.sh"), 0o755)
        try world.write("sites/flood.yaml", """
            base_url: http://127.0.0.1:9
            login:
              steps:
                - name: flood
                  plugin: flood.sh
                  timeout: 10m

            """)
        let started = ContinuousClock.now
        let run = try await Self.login(world, "flood")
        #expect(run.status == 1)
        #expect(run.stderr.contains("site 'flood', step 'flood'"), "\(run.stderr)")
        #expect(run.stderr.contains("printed more than 8 MiB on standard output"), "\(run.stderr)")
        #expect(run.stderr.contains("its process group was killed"), "\(run.stderr)")
        #expect(ContinuousClock.now - started < .seconds(300), "killed at the cap, not at its 10-minute timeout")
        #expect(world.vaultItems().isEmpty)
        HostileInputTests.expectNoInternalWords(run)
    }

    @Test func aClosedPortSaysItCannotConnect() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        // Port 9 (discard) on loopback: nothing listens there in a test container.
        try world.write("sites/closed.yaml", "base_url: http://127.0.0.1:9\nlogin: {steps: [{name: first, get: /}]}\n")
        let run = try await Self.login(world, "closed")
        #expect(run.status == 1)
        #expect(run.stderr.contains("site 'closed', step 'first'"), "\(run.stderr)")
        #expect(run.stderr.contains("cannot connect to the server; http://127.0.0.1:9/"), "\(run.stderr)")
        #expect(!run.stderr.contains("connect error"))
    }

    /// `-vv`: headers of every request and response, cookie decisions with reasons, body starts; values masked.
    @Test(arguments: [["-vv"], ["--verbose", "--verbose"]])
    func veryVerboseShowsTheExchangesMasked(_ flags: [String]) async throws {
        try await Self.withServer { world, port in
            try world.write("sites/trace.yaml", """
                base_url: http://127.0.0.1:\(port)
                credentials:
                  password: {env: HOSTILE_PASSWORD}
                login:
                  steps:
                    - name: login page
                      get: /login
                      expect: {status: 200}
                    - name: submit
                      post: /login
                      form: {pass: "{{ credentials.password }}"}
                cookies:
                  essential: [session]
                  accept: main-document-domain
                  limits: {max_cookies_per_domain: 1}

                """)
            let run = try await Self.login(world, "trace", flags)
            #expect(run.status == 0, "\(run.stderr)")
            let base = "http://127.0.0.1:\(port)"
            for expected in [
                "    > GET \(base)/login",
                "    < 200 \(base)/login",
                "    < Set-Cookie: remember=<masked>; Path=/; Max-Age=3600",
                "    * cookie remember stored for 127.0.0.1/",
                "    * cookie tracker refused: ",
                "    > POST \(base)/login",
                "    > Cookie: remember=<masked>",
                "    > Content-Type: application/x-www-form-urlencoded",
                "    >   pass=•••",
                "    * cookie session stored for 127.0.0.1/",
                "    * cookie remember for 127.0.0.1/ removed: the jar was over its cookie limits",
                "    < 303 \(base)/login",
                "    < Location: /home",
                "    > GET \(base)/home",
                "    <   welcome home",
            ] {
                #expect(run.stderr.contains(expected), "missing '\(expected)' in:\n\(run.stderr)")
            }
            Self.expectNoSecrets(run)

            // One -v shows none of it.
            let once = try await Self.login(world, "trace", ["-v"])
            #expect(once.status == 0)
            #expect(!once.stderr.contains("> GET") && !once.stderr.contains("* cookie"))
        }
    }

    @Test func loginWithAFullStandardOutputSaysSo() async throws {
        try await Self.withServer { world, port in
            try world.write("sites/full.yaml", "base_url: http://127.0.0.1:\(port)\nlogin: {steps: [{name: home, get: /home}]}\n")
            let binary = try #require(CLIRunner.executable).path
            let run = try await world.shell(#""$SK" login full --config config.yaml > /dev/full"#, environment: ["SK": binary])
            #expect(run.status == 1)
            #expect(run.stderr.contains("sessionkeeper: cannot write to standard output: no space left on device"), "\(run.stderr)")
            HostileInputTests.expectNoInternalWords(run)
        }
    }
}
