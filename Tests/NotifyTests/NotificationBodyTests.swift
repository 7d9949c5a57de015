import Foundation
import JSON
import Notify
import Scheduler
import SiteConfig
import Testing

/// The three webhook bodies, checked against the shapes the receivers document (Fixtures: Alertmanager's
/// `postableAlerts` from its OpenAPI file, ntfy's publish-as-JSON fields from its documentation).
@Suite struct NotificationBodyTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000.25)

    static func schema(_ name: String) throws -> JSONValue {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return try JSONValue.parse(Array(try Data(contentsOf: url)))
    }

    /// A prompt that waited, timed out into needs-attention, then recovered: every kind of notification.
    static func incident() -> [SiteNotification] {
        var tracker = IncidentTracker()
        var told: [SiteNotification] = []
        told += tracker.handle(SiteStateChange(site: "wiki", time: start, from: .loggingIn, to: .waitingForPerson,
                                               message: "Code sent to the phone ending 42",
                                               prompt: PromptRequest(name: "sms_code", expiresAt: start + 900)))
        told += tracker.handle(SiteStateChange(site: "wiki", time: start + 900, from: .waitingForPerson, to: .needsAttention,
                                               reason: .promptTimedOut, message: "no answer within 15m"))
        told += tracker.handle(SiteStateChange(site: "wiki", time: start + 1000, from: .loggingIn, to: .valid))
        return told
    }

    static func answerPage() throws -> Template {
        try Template(parsing: "https://phone.example/answer?site={{ site }}&prompt={{ prompt }}")
    }

    @Test func alertmanagerBodiesFitPostableAlertsAndResolveByEndsAt() throws {
        let schema = try Self.schema("alertmanager-postable-alerts.schema")
        let bodies = Self.incident().map { notification in
            NotificationBody.alertmanager([notification]) { _ in "sessionkeeper://localhost/sites/wiki" }
        }
        for body in bodies { #expect(SchemaCheck.problems(body, against: schema).isEmpty, "\(SchemaCheck.problems(body, against: schema))") }

        guard case .array(let waiting) = bodies[0], case .array(let timedOut) = bodies[1], case .array(let recovered) = bodies[2] else {
            Issue.record("not arrays")
            return
        }
        #expect(waiting.count == 1)
        #expect(waiting[0]["labels"] == .object([("alertname", .string("SessionKeeperWaitingForPerson")), ("site", .string("wiki")),
                                                 ("severity", .string("critical"))]))
        #expect(waiting[0]["endsAt"] == nil, "a firing alert has no end")
        #expect(waiting[0]["startsAt"] == .string("2027-01-15T08:00:00.250Z"))
        #expect(waiting[0]["annotations"]?["answer"] == .string("sessionkeeper answer wiki sms_code"))
        // The timeout: needs-attention fires, the prompt's alert is resolved.
        #expect(timedOut.map { $0["labels"]?["alertname"] } == [.string("SessionKeeperNeedsAttention"), .string("SessionKeeperWaitingForPerson")])
        #expect(timedOut[0]["endsAt"] == nil && timedOut[1]["endsAt"] == .string("2027-01-15T08:15:00.250Z"))
        #expect(timedOut[0]["annotations"]?["reason"] == .string("prompt-timed-out"))
        // Recovery resolves both, with the labels they fired with.
        #expect(recovered.map { $0["labels"]?["alertname"] } == [.string("SessionKeeperWaitingForPerson"), .string("SessionKeeperNeedsAttention")])
        #expect(recovered.allSatisfy { $0["endsAt"] == .string("2027-01-15T08:16:40.250Z") })
        #expect(recovered.allSatisfy { $0["labels"]?["site"] == .string("wiki") })
    }

    @Test func ntfyBodiesFitThePublishFormatWithAnAnswerButton() throws {
        let schema = try Self.schema("ntfy-publish.schema")
        let notifications = Self.incident()
        for notification in notifications {
            for answerURL in [nil, NotificationBody.answerURL(try Self.answerPage(), for: notification)] {
                let body = NotificationBody.ntfy(notification, topic: "sessionkeeper-alerts", answerURL: answerURL)
                #expect(SchemaCheck.problems(body, against: schema).isEmpty, "\(SchemaCheck.problems(body, against: schema))")
            }
        }
        let waiting = NotificationBody.ntfy(
            notifications[0], topic: "sessionkeeper-alerts", answerURL: NotificationBody.answerURL(try Self.answerPage(), for: notifications[0]))
        #expect(waiting["priority"] == .number("5") && waiting["tags"] == .array([.string("key")]))
        #expect(waiting["title"] == .string("SessionKeeper: wiki is waiting for a person"))
        #expect(waiting["actions"] == .array([.object([
            ("action", .string("view")), ("label", .string("Answer")),
            ("url", .string("https://phone.example/answer?site=wiki&prompt=sms_code")), ("clear", .bool(true)),
        ])]))
        #expect(waiting["click"] == .string("https://phone.example/answer?site=wiki&prompt=sms_code"))
        // Without an answer page the message says which command answers.
        let plain = NotificationBody.ntfy(notifications[0], topic: "t", answerURL: nil)
        #expect(plain["actions"] == nil)
        if case .string(let message)? = plain["message"] {
            #expect(message.contains("Answer with: sessionkeeper answer wiki sms_code"))
        } else {
            Issue.record("no message")
        }
        #expect(NotificationBody.ntfy(notifications[1], topic: "t", answerURL: nil)["priority"] == .number("4"))
        #expect(NotificationBody.ntfy(notifications[2], topic: "t", answerURL: nil)["tags"] == .array([.string("white_check_mark")]))
    }

    @Test func theEventJSONNamesTheSiteTheEventAndHowToAnswer() throws {
        let notifications = Self.incident()
        let waiting = NotificationBody.event(notifications[0], answerURL: "https://phone.example/a")
        #expect(waiting["version"] == .number("1") && waiting["event"] == .string("waiting-for-person") && waiting["site"] == .string("wiki"))
        #expect(waiting["prompt"] == .object([("name", .string("sms_code")), ("expires", .string("2027-01-15T08:15:00.250Z"))]))
        #expect(waiting["answer"] == .object([("command", .string("sessionkeeper answer wiki sms_code")), ("url", .string("https://phone.example/a"))]))
        #expect(waiting["message"] == .string("Code sent to the phone ending 42"))
        #expect(waiting["incident"]?["id"] == .string("wiki#1"))
        let attention = NotificationBody.event(notifications[1])
        #expect(attention["reason"] == .string("prompt-timed-out") && attention["ends"] == .array([.string("waiting-for-person")]))
        #expect(attention["answer"] == nil && attention["prompt"] == nil)
        let recovered = NotificationBody.event(notifications[2])
        #expect(recovered["event"] == .string("recovered") && recovered["reason"] == nil)
        #expect(recovered["incident"]?["started"] == .string("2027-01-15T08:00:00.250Z"))
    }

    @Test func ntfyURLsSplitIntoTheRootAndTheTopic() throws {
        let plain = try #require(NtfyTopic.split(URL(string: "https://ntfy.sh/mytopic")!))
        #expect(plain.root.absoluteString == "https://ntfy.sh/" && plain.topic == "mytopic")
        let nested = try #require(NtfyTopic.split(URL(string: "http://127.0.0.1:8080/ntfy/alerts_1/")!))
        #expect(nested.root.absoluteString == "http://127.0.0.1:8080/ntfy/" && nested.topic == "alerts_1")
        #expect(NtfyTopic.split(URL(string: "https://ntfy.sh/")!) == nil)
        #expect(NtfyTopic.split(URL(string: "https://ntfy.sh/a.b")!) == nil)
        #expect(NtfyTopic.split(URL(string: "https://ntfy.sh/t?x=1")!) == nil)
    }
}
