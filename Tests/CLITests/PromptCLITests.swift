import Foundation
import JSON
import Platform
import TestSupport
import Testing

/// `prompt` steps as a person meets them (SPEC section 12), with real processes: the demo site's `/login/code`
/// sign-in sends a one-time code out of band (its `/_control/sent-code` is the person's phone), the daemon's
/// login waits for it in waiting-for-person, a local webhook receiver is told, and `sessionkeeper answer` gives
/// the code. `sessionkeeper login` asks for it on its standard input instead.
@Suite struct PromptCLITests {
    static func codeSiteYAML(port: Int, timeout: String) -> String {
        demoSiteCodeLoginYAML(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: timeout,
            extra: "refresh: {before_expiry: 10m}\ncheck: {get: /api/me, expect: {status: 200}}\n")
    }

    /// The world's sites folder holds only the coded site; config.yaml has the socket at state/sk.sock, metrics,
    /// and the notifiers: one that hangs (it takes the request and never answers, for up to a minute) and the
    /// receiver.
    static func setUp(_ world: LoginCLIWorld, receiver: PythonServer?, hanging: PythonServer? = nil, timeout: String) throws {
        for name in ["demo", "demo-bad"] { try FileManager.default.removeItem(atPath: world.folder.path("sites/\(name).yaml")) }
        try codeSiteYAML(port: world.port, timeout: timeout).write(toFile: world.folder.path("sites/coded.yaml"), atomically: true, encoding: .utf8)
        var config = """
            state_dir: state
            vault: {key: {file: state/master.key}}
            socket: {path: state/sk.sock}
            metrics: true

            """
        if let receiver {
            config += """
                notify:
                  - webhook: \(hanging?.url("/hangs") ?? "http://127.0.0.1:9/down")
                    timeout: 60s
                  - webhook: \(receiver.url("/hooks/sessionkeeper"))

                """
        }
        try config.write(toFile: world.configPath, atomically: true, encoding: .utf8)
    }

    /// The code the demo site sent last, as the person's phone shows it; nil until one was sent.
    static func sentCode(_ world: LoginCLIWorld) async throws -> String? {
        let result = try await runProgram("/usr/bin/curl", ["-sf", "--max-time", "5", "http://127.0.0.1:\(world.port)/_control/sent-code"])
        guard result.status == 0 else { return nil }
        return try JSONValue.parse(result.outputText)["code"]?.plainText
    }

    static func waitForCode(_ world: LoginCLIWorld) async throws -> String {
        for _ in 0..<400 {
            if let code = try await sentCode(world) { return code }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CLIWorldError(message: "the demo site never sent a code")
    }

    static let silentListenerScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/silent_listener.py").path

    /// A world with the webhook receiver (NotifyTests' Fixtures/webhook_receiver.py, writing to the log it is
    /// given) and a notifier that hangs.
    static func withReceiver(_ body: (LoginCLIWorld, PythonServer, PythonServer, String) async throws -> Void) async throws {
        try await LoginCLIWorld.with { world in
            let log = world.folder.path("hook.jsonl")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let receiver = try await PythonServer.start(script: NotifyCLITests.receiverScript, arguments: [log])
            let hanging: PythonServer
            do {
                hanging = try await PythonServer.start(script: Self.silentListenerScript)
            } catch {
                await receiver.stop()
                throw error
            }
            do {
                try await body(world, receiver, hanging, log)
            } catch {
                await receiver.stop()
                await hanging.stop()
                throw error
            }
            await receiver.stop()
            await hanging.stop()
        }
    }

    /// The notification events the receiver got, in order.
    static func events(_ log: String) -> [JSONValue] {
        NotifyCLITests.requests(log).compactMap(NotifyCLITests.event)
    }

    @Test func aLoginWaitsForACodeSentOutOfBandAndTheAnswerCompletesIt() async throws {
        try await Self.withReceiver { world, receiver, hanging, log in
            try Self.setUp(world, receiver: receiver, hanging: hanging, timeout: "5m")
            let daemon = try await RunCLITests.startDaemon(world)

            // The person is told within 2 seconds of the prompt (the notifier that hangs holds nothing up).
            #expect(await RunCLITests.eventually { !Self.events(log).isEmpty }, "daemon log: \(daemon.outputText)")
            let first = try #require(NotifyCLITests.requests(log).first)
            let waiting = try #require(NotifyCLITests.event(first))
            #expect(waiting["event"] == .string("waiting-for-person") && waiting["site"] == .string("coded"), "\(waiting.serialized)")
            #expect(waiting["message"] == .string("Code sent to the phone ending 42"), "\(waiting.serialized)")
            // The daemon runs with --config: the command names it, so it works from any folder (issue 40).
            #expect(waiting["answer"]?["command"] == .string("sessionkeeper answer --config '\(world.configPath)' coded sms_code"), "\(waiting.serialized)")
            if case .string(let changed)? = waiting["time"], case .number(let received)? = first["time"],
               let changedAt = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(changed), let receivedAt = Double(received) {
                #expect(receivedAt - changedAt.timeIntervalSince1970 < 2, "told \(receivedAt - changedAt.timeIntervalSince1970) s after the prompt")
            } else {
                Issue.record("no times in \(first.serialized)")
            }

            // status and the socket show the state and the prompt.
            let status = try await world.run(["status", "--json", "--config", world.configPath])
            #expect(status.stdout.contains("\"state\":\"waiting-for-person\""), "\(status.stdout) \(status.stderr)")
            let table = try await world.run(["status", "--config", world.configPath])
            #expect(table.stdout.contains("waiting-for-person"), "\(table.stdout)")
            #expect(table.stdout.contains("asks: Code sent to the phone ending 42; answer with: sessionkeeper answer coded sms_code"), "\(table.stdout)")
            let site = try await runProgram(
                "/usr/bin/curl", ["-sf", "--unix-socket", world.folder.path("state/sk.sock"), "http://localhost/v1/sites/coded"])
            #expect(site.outputText.contains("\"prompt\":{\"name\":\"sms_code\""), "\(site.outputText)")

            // A wrong prompt name is refused (409, exit 1); the right one is answered from standard input.
            let code = try await Self.waitForCode(world)
            let wrong = try await world.run(["answer", "coded", "email_code", "--config", world.configPath], stdin: Data(code.utf8))
            #expect(wrong.status == 1 && wrong.stderr.contains("waits for an answer to 'sms_code'"), "\(wrong.stderr)")
            #expect(wrong.stderr.contains("sessionkeeper: site 'coded' waits for an answer"), "the site named once: \(wrong.stderr)")
            let answered = try await world.run(["answer", "coded", "sms_code", "--config", world.configPath], stdin: Data((code + "\n").utf8))
            #expect(answered.status == 0, "\(answered.stderr)")
            #expect(answered.stdout == "answered 'sms_code' of coded\n", "\(answered.stdout)")
            let answeredAt = ContinuousClock.now

            // The login completes with the code: the site is valid, told once as recovered.
            #expect(await RunCLITests.eventually { Self.events(log).count >= 2 }, "daemon log: \(daemon.outputText)")
            let recovered = try #require(Self.events(log).last)
            #expect(recovered["event"] == .string("recovered") && recovered["incident"]?["id"] == waiting["incident"]?["id"])
            // The notifier that hangs is still holding its first delivery (60 s): the login did not wait for it.
            #expect(ContinuousClock.now - answeredAt < .seconds(30), "the login waited for the notifier that hangs")
            let cookie = try await world.run(["cookie", "coded", "--config", world.configPath])
            #expect(cookie.status == 0 && cookie.stdout.contains("demo_session="), "\(cookie.stderr)")

            // The metrics name the state and the notifications.
            let metrics = try await runProgram(
                "/usr/bin/curl", ["-sf", "--unix-socket", world.folder.path("state/sk.sock"), "http://localhost/metrics"])
            #expect(metrics.outputText.contains("sessionkeeper_site_state{site=\"coded\",state=\"valid\"} 1.0"), "\(metrics.outputText)")
            #expect(metrics.outputText.contains("sessionkeeper_site_state{site=\"coded\",state=\"waiting-for-person\"} 0.0"))
            #expect(metrics.outputText.contains(
                "sessionkeeper_notifications_total{notifier=\"notify[1]\",event=\"waiting-for-person\",outcome=\"delivered\"} 1"),
                "\(metrics.outputText)")

            try await Task.sleep(for: .seconds(1))
            #expect(Self.events(log).count == 2, "exactly one notification and one recovered: \(RunCLITests.read(log))")
            let statusCode = await RunCLITests.stop(daemon)
            #expect(statusCode == 0, "daemon log: \(daemon.outputText)")
            // The answer is in no log, no output and no notification.
            for text in [daemon.outputText, RunCLITests.read(log), answered.stdout, answered.stderr, wrong.stderr, status.stdout, site.outputText,
                         metrics.outputText] {
                #expect(!text.contains(code), "the code appeared in \(text)")
            }
            #expect(!daemon.outputText.contains(LoginCLITests.password))
        }
    }

    @Test func aPromptNobodyAnswersLeavesTheSiteNeedingAttentionToldOnce() async throws {
        try await Self.withReceiver { world, receiver, _, log in
            try Self.setUp(world, receiver: receiver, timeout: "2s")
            let daemon = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually { Self.events(log).count >= 2 }, "daemon log: \(daemon.outputText)")
            let told = Self.events(log)
            #expect(told.map { $0["event"]?.plainText ?? "" } == ["waiting-for-person", "needs-attention"], "\(told)")
            let attention = try #require(told.last)
            #expect(attention["reason"] == .string("prompt-timed-out"), "\(attention.serialized)")
            #expect(attention["message"]?.plainText.contains("nobody answered within 2s") == true, "\(attention.serialized)")
            #expect(attention["incident"]?["id"] == told.first?["incident"]?["id"])
            let status = try await world.run(["status", "--json", "--config", world.configPath])
            #expect(status.stdout.contains("\"state\":\"needs-attention\""), "\(status.stdout)")
            // A late answer finds nothing waiting: 409, exit 1.
            let late = try await world.run(["answer", "coded", "--config", world.configPath], stdin: Data("123456".utf8))
            #expect(late.status == 1 && late.stderr.contains("is not waiting for an answer"), "\(late.stderr)")
            try await Task.sleep(for: .seconds(1))
            #expect(Self.events(log).count == 2, "needs-attention told once: \(RunCLITests.read(log))")
            #expect(await RunCLITests.stop(daemon) == 0)
        }
    }

    /// `sessionkeeper login` asks on its standard input: here a pipe the test writes the code into once the demo
    /// site sent it; with `-vv` the request that carries it shows it masked. Without an answer (standard input
    /// closed at once, not a terminal), it fails saying so.
    @Test func loginAsksForTheAnswerOnItsStandardInput() async throws {
        try await LoginCLIWorld.with { world in
            try Self.setUp(world, receiver: nil, timeout: "1m")
            let binary = try #require(CLIRunner.executable)
            let login = try await startProgram(
                binary.path, ["login", "coded", "-vv", "--config", world.configPath],
                environment: ["PATH": "/usr/bin:/bin", "HOME": world.folder.path, "DEMO_PASSWORD": LoginCLITests.password],
                directory: world.folder.path)
            let code = try await Self.waitForCode(world)
            login.write(Array(code.utf8))
            login.closeInput()
            let termination = await login.wait(within: .seconds(30))
            #expect(termination == .exited(0), "\(login.errorText)")
            #expect(login.outputText.contains("logged in to coded: demo_session"), "\(login.outputText)")
            #expect(login.errorText.contains("Code sent to the phone ending 42"), "\(login.errorText)")
            #expect(!login.outputText.contains(code) && !login.errorText.contains(code))

            let unanswered = try await world.run(["login", "coded", "--fresh", "--config", world.configPath], environment: ["DEMO_PASSWORD": LoginCLITests.password])
            #expect(unanswered.status == 1, "\(unanswered.stderr)")
            #expect(unanswered.stderr.contains("standard input is not a terminal and gave no answer"), "\(unanswered.stderr)")
        }
    }
}
