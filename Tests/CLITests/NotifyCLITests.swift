import Foundation
import JSON
import TestSupport
import Testing

/// `sessionkeeper run` with `notify:` (SPEC section 12) as a user runs it: the daemon logs in the demo site
/// with a wrong password, a webhook receiver the test started (NotifyTests' Fixtures/webhook_receiver.py)
/// is told within 2 seconds, naming the site; the password is fixed in the site file, and the receiver is
/// told `recovered` exactly once. Nothing sent holds a password or a cookie.
@Suite struct NotifyCLITests {
    static let receiverScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("NotifyTests/Fixtures/webhook_receiver.py").path
    static let wrongPassword = "wrong-password-for-the-test"

    /// The receiver's requests: each line's JSON record (time, path, headers, body).
    static func requests(_ log: String) -> [JSONValue] {
        RunCLITests.read(log).split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
    }

    static func event(_ record: JSONValue) -> JSONValue? {
        guard case .string(let body)? = record["body"] else { return nil }
        return try? JSONValue.parse(body)
    }

    @Test func aSiteThatNeedsAttentionIsToldOnceAndItsRecoveryOnce() async throws {
        try await LoginCLIWorld.with { world in
            let log = world.folder.path("hook.jsonl")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let receiver = try await PythonServer.start(script: Self.receiverScript, arguments: [log])
            do {
                try await Self.run(world, receiver: receiver, log: log)
            } catch {
                await receiver.stop()
                throw error
            }
            await receiver.stop()
        }
    }

    private static func run(_ world: LoginCLIWorld, receiver: PythonServer, log: String) async throws {
        // Only the site whose password is wrong.
        try FileManager.default.removeItem(atPath: world.folder.path("sites/demo.yaml"))
        try """
            state_dir: state
            vault: {key: {file: state/master.key}}
            notify:
              - webhook: \(receiver.url("/hooks/sessionkeeper"))
                headers: {X-Receiver-Token: {env: RECEIVER_TOKEN}}
            """.write(toFile: world.configPath, atomically: true, encoding: .utf8)
        let daemon = try await RunCLITests.startDaemon(
            world, environment: ["WRONG_PASSWORD": wrongPassword, "RECEIVER_TOKEN": "receiver-token"])

        #expect(await RunCLITests.eventually { !requests(log).isEmpty }, "daemon log: \(daemon.outputText)")
        let first = try #require(requests(log).first)
        let attention = try #require(event(first))
        #expect(attention["event"] == .string("needs-attention") && attention["site"] == .string("demo-bad"), "\(attention.serialized)")
        #expect(attention["reason"] == .string("credentials-refused"), "\(attention.serialized)")
        if case .string(let changed)? = attention["time"], case .number(let received)? = first["time"],
           let changedAt = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(changed), let receivedAt = Double(received) {
            #expect(receivedAt - changedAt.timeIntervalSince1970 < 2, "told \(receivedAt - changedAt.timeIntervalSince1970) s after the change")
        } else {
            Issue.record("no times in \(first.serialized)")
        }
        #expect(first["path"] == .string("/hooks/sessionkeeper"))
        #expect(first.serialized.contains("receiver-token"), "the header from the environment was sent")

        // The password is fixed in the site file: the daemon logs in, and says so once.
        try LoginCLIWorld.siteYAML(port: world.port, passwordSource: "{env: DEMO_PASSWORD}")
            .write(toFile: world.folder.path("sites/demo-bad.yaml"), atomically: true, encoding: .utf8)
        #expect(await RunCLITests.eventually { requests(log).count >= 2 }, "daemon log: \(daemon.outputText)")
        let recovered = try #require(requests(log).last.flatMap(event))
        #expect(recovered["event"] == .string("recovered") && recovered["site"] == .string("demo-bad"))
        #expect(recovered["incident"]?["id"] == attention["incident"]?["id"])

        let cookie = try await world.run(["cookie", "demo-bad", "--config", world.configPath])
        #expect(cookie.status == 0, "\(cookie.stderr)")
        let sessionValue = cookie.stdout.split(whereSeparator: { $0 == ";" || $0.isWhitespace })
            .first { $0.hasPrefix("demo_session=") }.map { String($0.dropFirst("demo_session=".count)) } ?? ""
        try await Task.sleep(for: .seconds(1))
        #expect(requests(log).count == 2, "exactly one notification and one recovered: \(RunCLITests.read(log))")

        // Nothing sent holds the password, the wrong one, or the session's cookie.
        let sent = RunCLITests.read(log)
        #expect(!sessionValue.isEmpty && !sent.contains(sessionValue))
        #expect(!sent.contains(LoginCLITests.password) && !sent.contains(wrongPassword))
        // The failure is named, the login page's excerpt (in the daemon's log) is not sent.
        #expect(attention["message"]?.plainText.contains("expected status 303, found status 200") == true, "\(attention.serialized)")
        #expect(!sent.contains("last response") && !sent.contains("Invalid username or password"))
        let status = await RunCLITests.stop(daemon)
        #expect(status == 0, "daemon log: \(daemon.outputText)")
        #expect(!daemon.outputText.contains(wrongPassword))
    }
}
