import CookieJar
import Foundation
import HTTPTransport
import JSON
import Locking
import SiteConfig
import TestSupport
import Testing

@testable import LoginFlow

@Suite struct ProcessPluginRunnerTests {
    static func path(_ name: String) -> String { Fixture.directory.appendingPathComponent(name).path }
    static let baseEnvironment = ["PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"]

    static func run(
        _ name: String, input: String = "{}", environment: [String: String] = baseEnvironment, timeout: Duration = .seconds(20)
    ) async throws -> (PluginOutput, [String]) {
        let lines = Locked<[String]>([])
        let output = try await ProcessPluginRunner().run(
            PluginInvocation(executablePath: path(name), environment: environment, input: Data(input.utf8), timeout: timeout),
            standardErrorLine: { line in lines.withLock { $0.append(line) } })
        return (output, lines.withLock { $0 })
    }

    @Test func successfulRunDeliversStdoutAndStderrLines() async throws {
        let input = #"{"site":"s","step":"p","with":{"name":"bob","code":"123456"},"vars":{},"cookies":[],"last_response":null}"#
        let (output, lines) = try await Self.run("echo-plugin.py", input: input)
        #expect(output.termination == .exited(0))
        #expect(lines == ["starting for site s step p", "using code 123456"])
        let text = String(decoding: output.standardOutput, as: UTF8.self)
        #expect(text.contains("\"greeting\": \"hello bob\""))
        #expect(!output.outputTruncated)
    }

    @Test func nonZeroExitIsReported() async throws {
        let (output, lines) = try await Self.run("exit-plugin.sh")
        #expect(output.termination == .exited(3))
        #expect(lines == ["something broke"])
    }

    @Test func onlyTheGivenEnvironmentReachesThePlugin() async throws {
        var environment = Self.baseEnvironment
        environment["BAR"] = "bar-value"
        let (output, _) = try await Self.run("env-plugin.py", environment: environment)
        let answer = try JSONValue.parse(Array(output.standardOutput))
        #expect(JSONPointer.resolve("/vars/env", in: answer) == .string("BAR,HOME,LANG,PATH"))
    }

    @Test func timeoutKillsTheWholeProcessGroup() async throws {
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("plugin-grandchild-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: pidFile) }
        var environment = Self.baseEnvironment
        environment["PID_FILE"] = pidFile.path
        // Timed around the call in a high-priority task: the test's own task waits behind every other test's
        // CPU-bound work on the default-priority pool (seconds on two cores), which is not the runner's time.
        let (output, lines, elapsed) = try await Task.detached(priority: .high) {
            let started = ContinuousClock.now
            let (output, lines) = try await Self.run("hang-plugin.sh", environment: environment, timeout: .milliseconds(500))
            return (output, lines, ContinuousClock.now - started)
        }.value
        #expect(output.termination == .timedOut)
        #expect(lines == ["started grandchild"])
        // SIGTERM is ignored by the script, so SIGKILL after the grace period ends it. The upper bound only has
        // to tell that from the script's own 300 s sleep: a parallel suite on two cores has delayed it past 10 s.
        #expect(elapsed >= .milliseconds(500))
        #expect(elapsed < .seconds(60))
        let grandchild = try #require(Int32(try String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await Self.isGoneOrZombie(grandchild))
    }

    /// A killed orphan may linger as a zombie until init reaps it; either way it no longer runs. Polled
    /// on a dedicated thread.
    static func isGoneOrZombie(_ pid: Int32) async -> Bool {
        await onDedicatedThread {
            for _ in 0..<50 {
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
                if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
                usleep(20_000)
            }
            return false
        }
    }

    @Test func cancellationKillsThePlugin() async throws {
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("plugin-cancel-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: pidFile) }
        var environment = Self.baseEnvironment
        environment["PID_FILE"] = pidFile.path
        // The run notes when it returned, in a high-priority task, so the wait measured is the runner's and
        // not the test task's turn on the busy default-priority pool.
        let task = Task.detached(priority: .high) {
            let result = try await Self.run("hang-plugin.sh", environment: environment, timeout: .seconds(60))
            return (result.0, ContinuousClock.now)
        }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        let started = ContinuousClock.now
        let (output, finished) = try await task.value
        #expect(finished - started < .seconds(5))
        #expect(output.termination == .timedOut)
    }

    @Test func aPluginThatDoesNotReadItsInputDoesNotHang() async throws {
        let big = #"{"pad":""# + String(repeating: "x", count: 4 * 1024 * 1024) + #""}"#
        let (output, _) = try await Self.run("noread-plugin.sh", input: big)
        #expect(output.termination == .exited(0))
        #expect(String(decoding: output.standardOutput, as: UTF8.self).contains("done"))
    }

    @Test func missingExecutableIsALaunchError() async throws {
        await #expect(throws: PluginLaunchError.self) {
            _ = try await Self.run("no-such-plugin")
        }
    }
}

@Suite struct PluginStepTests {
    static func plugin(_ name: String, with: JSONTemplate = .object([]), env: [PluginStep.EnvironmentEntry] = [], passCredentials: Bool = false, timeout: Duration = .seconds(20)) -> PluginStep {
        PluginStep(
            plugin: name, executablePath: ProcessPluginRunnerTests.path(name), with: with, environment: env, timeout: timeout,
            passCredentials: passCredentials)
    }

    static let environment = ["PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "FOO": "foo-value", "UNRELATED": "x"]

    @Test func pluginStepExchangesJSONAndAppliesTheAnswer() async throws {
        let client = FakeHTTPClient { request in
            Fixture.response(request, headers: [("Set-Cookie", "page_cookie=page-value-1; Path=/")], body: "<p>page</p>")
        }
        let site = Fixture.site([
            Fixture.step("page", Fixture.get("/page")),
            Step(name: "second factor", mark: Fixture.mark, action: .plugin(Self.plugin(
                "echo-plugin.py",
                with: .object([("name", .string(Fixture.template("bob"))), ("code", .string(Fixture.template("{{ credentials.otp }}")))]),
                passCredentials: true))),
            Fixture.step("after", Fixture.get("/after?g={{ greeting }}&c={{ cookie_names }}&s={{ last_status }}&h={{ had_credentials }}")),
        ], credentials: ["otp", "password"], essential: ["plugin_cookie", "from_line"])
        let events = EventLog()
        let storage = CookieStorage()
        let engine = Fixture.engine(client, credentials: ["otp": "987654", "password": "pw-secret-1"], environment: Self.environment)
        let result = try await engine.login(site, storage: storage, observer: events.observer)

        let after = try #require(client.requests.last)
        #expect(after.url.absoluteString == "https://app.example.com/after?g=hello%20bob&c=page_cookie&s=200&h=true")
        #expect(after.headers["X-Plugin-Token"] == "plugin-header-token")
        #expect(after.headers["Cookie"]?.contains("plugin_cookie=plugin-cookie-value") == true)
        #expect(after.headers["Cookie"]?.contains("from_line=line-cookie-value") == true)
        #expect(result.essentialCookies.allSatisfy { $0.isSet })
        #expect(result.steps.map(\.step) == ["page", "second factor", "after"])
        #expect(events.pluginLines == ["starting for site test step second factor", "using code •••"])
    }

    @Test func pluginLoginReturnsTheSession() async throws {
        var site = Fixture.site([], essential: ["plugin_cookie"])
        site.login = .plugin(Self.plugin("echo-plugin.py"))
        let result = try await Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment)
            .login(site, storage: CookieStorage())
        #expect(result.essentialCookies.first?.isSet == true)
        #expect(result.essentialCookies.first?.expires != nil)
        #expect(result.steps.map(\.step) == ["login"])
    }

    /// A plugin's cookies are the site's cookies like a response's: the accept policy decides.
    @Test func pluginCookiesObeyTheAcceptPolicy() async throws {
        let client = FakeHTTPClient { Fixture.response($0) }
        let engine = Fixture.engine(client, environment: Self.environment)

        var refusing = Fixture.site([], accept: .never)
        refusing.login = .plugin(Self.plugin("echo-plugin.py"))
        let none = CookieStorage(acceptPolicy: .never)
        _ = try await engine.login(refusing, storage: none)
        #expect(none.allCookies.isEmpty)

        // The plugin's structured cookie is for app.example.com; the site's main document is elsewhere.
        var elsewhere = Fixture.site([], accept: .mainDocumentDomain)
        elsewhere.baseURL = URL(string: "https://other.test/")!
        elsewhere.login = .plugin(Self.plugin("echo-plugin.py"))
        let strict = CookieStorage(acceptPolicy: .mainDocumentDomain)
        _ = try await engine.login(elsewhere, storage: strict)
        #expect(strict.allCookies.map(\.name) == ["from_line"])

        var home = Fixture.site([], accept: .mainDocumentDomain)
        home.login = .plugin(Self.plugin("echo-plugin.py"))
        let accepted = CookieStorage(acceptPolicy: .mainDocumentDomain)
        _ = try await engine.login(home, storage: accepted)
        #expect(accepted.allCookies.map(\.name).sorted() == ["from_line", "plugin_cookie"])
    }

    @Test func environmentIsMinimalPlusTheStepsEntries() async throws {
        let site = Fixture.site([
            Step(name: "env", mark: Fixture.mark, action: .plugin(Self.plugin(
                "env-plugin.py", env: [.inherit("FOO"), .inherit("NOT_SET"), .set(name: "BAR", value: Fixture.template("b-{{ credentials.user }}"))]))),
            Fixture.step("after", Fixture.get("/after?env={{ env }}&bar={{ bar }}")),
        ], credentials: ["user"])
        let client = FakeHTTPClient { Fixture.response($0) }
        _ = try await Fixture.engine(client, credentials: ["user": "u1"], environment: Self.environment).login(site, storage: CookieStorage())
        #expect(client.requests.last?.url.query == "env=BAR,FOO,HOME,LANG,PATH&bar=b-u1")
    }

    @Test(arguments: [
        ("error-plugin.sh", "error-plugin.sh: captcha required"),
        ("exit-plugin.sh", "exit-plugin.sh: exited with status 3"),
        ("invalid-plugin.sh", "exit"),
    ])
    func failuresStopTheFlow(name: String, detail: String) async throws {
        let site = Fixture.site([Step(name: "plugin", mark: Fixture.mark, action: .plugin(Self.plugin(name)))])
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), site))
        #expect(error.kind == .plugin)
        #expect(error.step == "plugin")
        if name == "invalid-plugin.sh" {
            #expect(error.detail?.hasPrefix("invalid-plugin.sh: its output is not JSON") == true)
        } else {
            #expect(error.detail == detail)
        }
    }

    /// Fixtures/reply-plugin.sh prints $REPLY: each answer below breaks the protocol's schema one way.
    @Test(arguments: [
        (#"{"vars": []}"#, #""vars" must be an object, found an array"#),
        (#"{"vars": {"a": 1}, "headers": "x"}"#, #""headers" must be an object, found a string"#),
        (#"{"set_cookie": "a=b"}"#, #""set_cookie" must be an array, found a string"#),
        (#"{"set_cookie": ["a=b", 7]}"#, #""set_cookie" item 2 must be a string, found a number"#),
        (#"{"cookies": [{"name": "a", "value": "SECRETVALUE", "domain": "app.example.com", "secure": "yes"}]}"#,
         #""cookies" item 1: "secure" must be true or false, found a string"#),
        (#"{"cookies": [{"value": "SECRETVALUE", "domain": "app.example.com"}]}"#, #""cookies" item 1: "name" is missing"#),
    ])
    func answersThatBreakTheSchemaFailTheStepNamingTheKey(reply: String, reason: String) async throws {
        let site = Fixture.site([Step(name: "plugin", mark: Fixture.mark, action: .plugin(Self.plugin(
            "reply-plugin.sh", env: [.set(name: "REPLY", value: Fixture.template(reply))])))])
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), site))
        #expect(error.kind == .plugin)
        #expect(error.detail == "reply-plugin.sh: its output does not fit the plugin protocol: \(reason)")
        #expect(error.description.contains("SECRETVALUE") == false)
    }

    @Test func answerVariablesKeepNumbersAsWrittenAndNullKeysAreAbsent() async throws {
        let reply = #"{"vars": {"n": 1.10, "big": 12345678901234567890, "s": "x y", "o": {"a": [true, null]} }, "headers": null, "error": null}"#
        let site = Fixture.site([
            Step(name: "plugin", mark: Fixture.mark, action: .plugin(Self.plugin(
                "reply-plugin.sh", env: [.set(name: "REPLY", value: Fixture.template(reply))]))),
            Fixture.step("after", Fixture.get("/after?n={{ n }}&big={{ big }}&s={{ s }}&o={{ o }}")),
        ])
        let client = FakeHTTPClient { Fixture.response($0) }
        _ = try await Fixture.engine(client, environment: Self.environment).login(site, storage: CookieStorage())
        let query = try #require(client.requests.last?.url.query(percentEncoded: false))
        #expect(query == #"n=1.10&big=12345678901234567890&s=x y&o={"a":[true,null]}"#)
    }

    @Test func timeoutFailsTheStep() async throws {
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("plugin-step-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: pidFile) }
        var environment = Self.environment
        environment["PID_FILE"] = pidFile.path
        let site = Fixture.site([Step(name: "hang", mark: Fixture.mark, action: .plugin(Self.plugin(
            "hang-plugin.sh", env: [.inherit("PID_FILE")], timeout: .milliseconds(300))))])
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: environment), site))
        #expect(error.kind == .plugin)
        #expect(error.detail == "hang-plugin.sh: timed out after 300ms; its process group was killed")
    }

    @Test func pluginSecretsAreMaskedInLaterErrors() async throws {
        let client = FakeHTTPClient { request in
            Fixture.response(request, 403, body: "denied for plugin-header-token and plugin-cookie-value and line-cookie-value")
        }
        let site = Fixture.site([
            Step(name: "plugin", mark: Fixture.mark, action: .plugin(Self.plugin("echo-plugin.py"))),
            Fixture.step("use", Fixture.get("/x", expect: [SiteConfig.Expectation(.status([200]))])),
        ])
        let error = try #require(await loginError(Fixture.engine(client, environment: Self.environment), site))
        #expect(error.response?.bodyExcerpt == "denied for ••• and ••• and •••")
    }
}

/// SPEC section 5 through the engine and the real runner: a plugin sees PATH, HOME, LANG and its step's
/// `env:` names, never the vault passphrase or the daemon's other variables. Values are compared, never printed.
@Suite struct PluginEnvironmentTests {
    /// The real runner, keeping each answer for the test to look at.
    final class RecordingRunner: PluginRunner {
        let answers = Locked<[Data]>([])

        func run(
            _ invocation: PluginInvocation, standardErrorLine: @escaping @Sendable (String) -> Void
        ) async throws(PluginLaunchError) -> PluginOutput {
            let output = try await ProcessPluginRunner().run(invocation, standardErrorLine: standardErrorLine)
            answers.withLock { $0.append(output.standardOutput) }
            return output
        }
    }

    @Test func aPluginGetsNeitherThePassphraseNorTheDaemonsOtherVariables() async throws {
        let secret = "master-passphrase-\(UUID().uuidString)"
        var environment = ProcessInfo.processInfo.environment
        environment["SESSIONKEEPER_PASSPHRASE"] = secret
        environment["SK_TEST_MARKER"] = "marker-value"
        environment["LISTED"] = "listed-value"
        environment["LANG"] = "C.UTF-8"
        environment["HOME"] = "/home/sk-test"
        let site = Fixture.site([
            Step(name: "env", mark: Fixture.mark, action: .plugin(PluginStepTests.plugin("environment-dump-plugin.py", env: [.inherit("LISTED")]))),
            Fixture.step("after", Fixture.get("/after")),
        ])
        let runner = RecordingRunner()
        _ = try await Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: environment, plugins: runner)
            .login(site, storage: CookieStorage())
        let answer = try #require(runner.answers.withLock { $0.first })
        let text = String(decoding: answer, as: UTF8.self)
        // Booleans only: a failing expectation shows its operands, and the answer must never be shown.
        let hasPassphrase = text.contains(secret), hasMarker = text.contains("SK_TEST_MARKER")
        let hasPassphraseName = text.contains("SESSIONKEEPER_PASSPHRASE")
        #expect(!hasPassphrase)
        #expect(!hasMarker)
        #expect(!hasPassphraseName)
        let document = try #require(try JSONSerialization.jsonObject(with: answer) as? [String: [String: String]])
        let dump = try #require(document["vars"]?["environment"])
        let names = dump.split(separator: "\n").map { String($0.prefix { $0 != "=" }) }
        #expect(names == ["HOME", "LANG", "LISTED", "PATH"])
        let keptHomeAndListed = dump.contains("HOME=/home/sk-test") && dump.contains("LISTED=listed-value")
        #expect(keptHomeAndListed)
    }
}
