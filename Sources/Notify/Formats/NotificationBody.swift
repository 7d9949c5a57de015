import Foundation
import JSON
import Scheduler
import SiteConfig

/// The bodies notifiers send, built from a ``SiteNotification`` alone: nothing else reaches them, so a
/// body holds nothing the notification does not (no cookie, no credential, no answer).
public enum NotificationBody {
    /// The version of the event JSON (`json` webhooks and commands' standard input).
    public static let eventVersion = 1

    /// The event as SessionKeeper writes it:
    ///
    /// ```json
    /// {"version": 1, "event": "needs-attention", "site": "wiki", "time": "…", "title": "…", "text": "…",
    ///  "incident": {"id": "wiki#3", "started": "…"}, "reason": "credentials-refused", "message": "…",
    ///  "prompt": {"name": "sms_code", "expires": "…"}, "answer": {"command": "…", "url": "…"},
    ///  "ends": ["waiting-for-person"]}
    /// ```
    ///
    /// `reason` is there for needs-attention, `prompt` and `answer` for waiting-for-person (`answer.url` when
    /// the notifier has an `answer_url`), `message` when the daemon gave one, `ends` when earlier events of
    /// the incident no longer hold.
    public static func event(_ notification: SiteNotification, answerURL: String? = nil) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("version", .number(String(eventVersion))),
            ("event", .string(notification.event.rawValue)),
            ("site", .string(notification.site)),
            ("time", .string(timestamp(notification.time))),
            ("title", .string(notification.title)),
            ("text", .string(notification.text)),
            ("incident", .object([
                ("id", .string(notification.incident.description)),
                ("started", .string(timestamp(notification.incidentStarted))),
            ])),
        ]
        if let reason = notification.reason { members.append(("reason", .string(reason.rawValue))) }
        if let message = notification.message { members.append(("message", .string(message))) }
        if let prompt = notification.prompt {
            var fields: [(key: String, value: JSONValue)] = [("name", .string(prompt.name))]
            if let expires = prompt.expiresAt { fields.append(("expires", .string(timestamp(expires)))) }
            members.append(("prompt", .object(fields)))
        }
        if let command = notification.answerCommand {
            var answer: [(key: String, value: JSONValue)] = [("command", .string(command))]
            if let answerURL { answer.append(("url", .string(answerURL))) }
            members.append(("answer", .object(answer)))
        }
        if !notification.ends.isEmpty { members.append(("ends", .array(notification.ends.map { .string($0.rawValue) }))) }
        return .object(members)
    }

    // MARK: Alertmanager

    /// `alertname` of each event's alert.
    public static func alertName(_ event: NotificationEvent) -> String {
        switch event {
        case .waitingForPerson: "SessionKeeperWaitingForPerson"
        case .needsAttention: "SessionKeeperNeedsAttention"
        case .recovered: "SessionKeeperRecovered"
        }
    }

    /// `severity`: a prompt waits minutes for its answer; a site that needs attention keeps serving its
    /// session until it expires.
    public static func severity(_ event: NotificationEvent) -> String {
        event == .waitingForPerson ? "critical" : "warning"
    }

    /// Alertmanager's API v2 body (`POST /api/v2/alerts`, the `postableAlerts` schema): the notification's
    /// alert firing (no `endsAt`), and each alert it ends resolved (`endsAt` now). An alert's identity is its
    /// labels: `alertname` (per event), `site` and `severity`, which routes match on.
    ///
    /// - Parameters:
    ///   - firing: false to send only the ends (for a notifier that does not list the event itself).
    ///   - generatorURL: the back-link of each alert (the answer page when there is one).
    public static func alertmanager(
        _ notifications: [SiteNotification], firing: Bool = true, generatorURL: (SiteNotification) -> String
    ) -> JSONValue {
        var alerts: [JSONValue] = []
        for notification in notifications {
            if firing, notification.event != .recovered {
                alerts.append(alert(
                    notification.event, of: notification, startsAt: notification.time, endsAt: nil,
                    generatorURL: generatorURL(notification)))
            }
            for ended in notification.ends where ended != .recovered {
                alerts.append(alert(
                    ended, of: notification, startsAt: notification.incidentStarted, endsAt: notification.time,
                    generatorURL: generatorURL(notification)))
            }
        }
        return .array(alerts)
    }

    private static func alert(
        _ event: NotificationEvent, of notification: SiteNotification, startsAt: Date, endsAt: Date?, generatorURL: String
    ) -> JSONValue {
        var annotations: [(key: String, value: JSONValue)] = [
            ("summary", .string(endsAt == nil ? notification.title : "SessionKeeper: \(notification.site): \(event.rawValue) ended")),
            ("description", .string(endsAt == nil ? notification.text : "Followed by \(notification.event.rawValue).\n\(notification.text)")),
        ]
        if endsAt == nil, let reason = notification.reason { annotations.append(("reason", .string(reason.rawValue))) }
        if endsAt == nil, let command = notification.answerCommand { annotations.append(("answer", .string(command))) }
        var members: [(key: String, value: JSONValue)] = [
            ("labels", .object([
                ("alertname", .string(alertName(event))),
                ("site", .string(notification.site)),
                ("severity", .string(severity(event))),
            ])),
            ("annotations", .object(annotations)),
            ("startsAt", .string(timestamp(startsAt))),
        ]
        if let endsAt { members.append(("endsAt", .string(timestamp(endsAt)))) }
        members.append(("generatorURL", .string(generatorURL)))
        return .object(members)
    }

    // MARK: ntfy

    /// ntfy's publish-as-JSON body (posted to the server's root): `topic`, `title`, `message`, `tags` (an
    /// emoji per event), `priority` (5 for a waiting prompt, 4 for needs-attention, 3 for recovered) and, for
    /// a prompt with an answer page, a `view` action button and `click` opening it. Without one, the message
    /// says which command answers.
    public static func ntfy(_ notification: SiteNotification, topic: String, answerURL: String?) -> JSONValue {
        let tag: String
        let priority: Int
        switch notification.event {
        case .waitingForPerson: (tag, priority) = ("key", 5)
        case .needsAttention: (tag, priority) = ("warning", 4)
        case .recovered: (tag, priority) = ("white_check_mark", 3)
        }
        var members: [(key: String, value: JSONValue)] = [
            ("topic", .string(topic)),
            ("title", .string(notification.title)),
            ("message", .string(notification.text)),
            ("tags", .array([.string(tag)])),
            ("priority", .number(String(priority))),
        ]
        if notification.event == .waitingForPerson, let answerURL {
            members.append(("click", .string(answerURL)))
            members.append(("actions", .array([.object([
                ("action", .string("view")),
                ("label", .string("Answer")),
                ("url", .string(answerURL)),
                ("clear", .bool(true)),
            ])])))
        }
        return .object(members)
    }

    // MARK: Helpers

    /// RFC 3339 in UTC with milliseconds (`2026-05-01T12:00:00.123Z`), which Alertmanager and ntfy read.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `answer_url` for a notification: `{{ site }}` and `{{ prompt }}` percent-encoded.
    public static func answerURL(_ template: Template, for notification: SiteNotification) -> String {
        template.render { name in
            let value = name == "site" ? notification.site : (notification.prompt?.name ?? "")
            return value.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? value
        }
    }
}

extension CharacterSet {
    /// RFC 3986 section 2.3: letters, digits, `-`, `.`, `_`, `~`: safe in any part of a URL.
    static let urlUnreservedCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}
