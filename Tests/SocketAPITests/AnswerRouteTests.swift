import Daemon
import Foundation
import JSON
import Locking
import Scheduler
@testable import SocketAPI
import TestSupport
import Testing

/// `POST /v1/sites/NAME/answer` (SPEC section 12): a person's answer to the prompt a site's login waits on, for the
/// daemon's managers only; the site's state, its prompt and the state event as clients see them.
@Suite struct AnswerRouteTests {
    static func codeSiteYAML(_ base: URL) -> String {
        demoSiteCodeLoginYAML(baseURL: base, timeout: "5m", extra: "access: {uids: [65534]}")
    }

    @Test func onlyAManagerAnswersAndTheAnswerCompletesTheLogin() async throws {
        try await SocketWorld.withWorld { world in
            let changes = Locked<[SiteStateChange]>([])
            let collector = Task { [events = await world.keeper.events()] in
                for await event in events {
                    if case .state(let change) = event { changes.withLock { $0.append(change) } }
                }
            }
            defer { collector.cancel() }
            await world.keeper.apply([try world.site("coded", yaml: Self.codeSiteYAML(world.server.baseURL))])
            let waiting = try await waitUntil(.seconds(15)) { await world.keeper.snapshot(of: "coded")?.status.phase == .waitingForPerson }
            try #require(waiting)
            try await world.serving(world.socketServer()) {
                // A reader of the site sees it waiting, with its prompt, but may not answer.
                let site = try await world.curl("/v1/sites/coded", asNobody: true)
                #expect(site.json?["state"] == .string("waiting-for-person"))
                #expect(site.json?["prompt"]?["name"] == .string("sms_code"), "\(site.body)")
                #expect(site.json?["prompt"]?["message"] == .string("Code sent to the phone ending 42"))
                let refused = try await world.curl("POST", "/v1/sites/coded/answer", body: "123456", asNobody: true)
                #expect(refused.status == 403 && refused.errorCode == "forbidden", "\(refused.body)")

                #expect(try await world.curl("POST", "/v1/sites/nowhere/answer", body: "1").status == 404)
                let unknown = try await world.curl("POST", "/v1/sites/coded/answer?code=1", body: "1")
                #expect(unknown.status == 400 && unknown.body.contains("'code'"), "\(unknown.body)")
                let empty = try await world.curl("POST", "/v1/sites/coded/answer", body: "\n")
                #expect(empty.status == 400, "\(empty.body)")
                let other = try await world.curl("POST", "/v1/sites/coded/answer?name=email_code", body: "1")
                #expect(other.status == 409 && other.errorCode == "no_prompt", "\(other.body)")
                #expect(try await world.curl("GET", "/v1/sites/coded/answer").status == 405)

                let sent = try await runProgram("/usr/bin/curl", ["-sf", world.server.baseURL.absoluteString + "/_control/sent-code"])
                let code = try #require(try JSONValue.parse(sent.outputText)["code"]?.plainText)
                let answered = try await world.curl("POST", "/v1/sites/coded/answer?name=sms_code", body: code + "\n")
                #expect(answered.status == 200, "\(answered.body)")
                #expect(answered.json == .object([("status", .string("answered")), ("prompt", .string("sms_code"))]))
                let valid = try await waitUntil(.seconds(15)) { await world.keeper.snapshot(of: "coded")?.status.phase == .valid }
                #expect(valid)
                let again = try await world.curl("POST", "/v1/sites/coded/answer", body: code)
                #expect(again.status == 409 && again.body.contains("is not waiting for an answer"), "\(again.body)")
                #expect(!world.logs.all.contains { $0.contains(code) }, "the answer is in no log line")
            }
            // The state events carry the prompt, and the way back.
            _ = try await waitUntil(.seconds(10)) { changes.withLock { $0.last?.to == .valid } }
            let seen = changes.withLock { $0 }
            #expect(seen.map(\.to) == [.waitingForPerson, .loggingIn, .valid], "\(seen)")
            let first = try #require(seen.first)
            #expect(first.prompt?.name == "sms_code")
            let text = try #require(SiteWire.serverSentEvent(.state(first), id: 1))
            #expect(text.contains("\"to\":\"waiting-for-person\",\"prompt\":{\"name\":\"sms_code\""), "\(text)")
        }
    }
}
