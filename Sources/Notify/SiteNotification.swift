import Foundation
import Scheduler
import SiteConfig

/// One episode of a site needing a person: from the change that took it out of a good state until it is
/// valid again. Numbered per process, so two incidents of one site never share an id.
public struct IncidentID: Sendable, Hashable, CustomStringConvertible {
    public var site: String
    public var number: UInt64

    public init(site: String, number: UInt64) {
        self.site = site
        self.number = number
    }

    public var description: String { "\(site)#\(number)" }
}

/// What the notifiers are told: one event of an incident.
///
/// Built from state changes only, it carries the site's name, the reason and message the daemon logs
/// (already free of secrets), and how to answer; never a cookie, a credential or an answer.
public struct SiteNotification: Sendable, Hashable {
    public var event: NotificationEvent
    public var site: String
    /// When it happened.
    public var time: Date
    public var incident: IncidentID
    /// When the incident began.
    public var incidentStarted: Date
    /// For needs-attention.
    public var reason: AttentionReason?
    /// The failure, or the prompt's message.
    public var message: String?
    /// For waiting-for-person.
    public var prompt: PromptRequest?
    /// Events told earlier in this incident that no longer hold (a prompt that timed out, everything on
    /// recovery): an Alertmanager resolves their alerts.
    public var ends: [NotificationEvent]
    /// The config.yaml the answer command names (`--config PATH`): set when the daemon's is not the one the default
    /// lookup finds from anywhere, so the command works when run in another folder or shell.
    public var answerConfig: String?

    public init(
        event: NotificationEvent, site: String, time: Date, incident: IncidentID, incidentStarted: Date,
        reason: AttentionReason? = nil, message: String? = nil, prompt: PromptRequest? = nil, ends: [NotificationEvent] = []
    ) {
        self.event = event
        self.site = site
        self.time = time
        self.incident = incident
        self.incidentStarted = incidentStarted
        self.reason = reason
        self.message = message
        self.prompt = prompt
        self.ends = ends
    }

    /// The command that answers the prompt, for waiting-for-person.
    public var answerCommand: String? {
        guard event == .waitingForPerson, let prompt else { return nil }
        let config = answerConfig.map { " --config \(Self.shellWord($0))" } ?? ""
        return "sessionkeeper answer\(config) \(Self.shellWord(site)) \(Self.shellWord(prompt.name))"
    }

    /// One line naming the site and what happened.
    public var title: String {
        switch event {
        case .waitingForPerson: "SessionKeeper: \(site) is waiting for a person"
        case .needsAttention: "SessionKeeper: \(site) needs attention"
        case .recovered: "SessionKeeper: \(site) recovered"
        }
    }

    /// What a person reads under the title: the reason, the message, and how to answer.
    public var text: String {
        var lines: [String] = []
        switch event {
        case .waitingForPerson:
            lines.append(message ?? "A login step asks for a person's answer.")
            if let expires = prompt?.expiresAt { lines.append("It waits until \(Self.clockTime(expires)).") }
            if let answerCommand { lines.append("Answer with: \(answerCommand)") }
        case .needsAttention:
            let summary = (reason ?? .other).summary
            lines.append(summary.prefix(1).uppercased() + summary.dropFirst() + ".")
            if let message, !message.isEmpty { lines.append(message) }
        case .recovered:
            lines.append("\(site) is logged in again (the incident began at \(Self.clockTime(incidentStarted))).")
        }
        return lines.joined(separator: "\n")
    }

    /// RFC 3339 in UTC, whole seconds (`2026-05-01T12:00:00Z`), as the logs and the API write times.
    static func clockTime(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// A site or prompt name as one shell word: names are words already, quoted only when they hold
    /// anything else.
    static func shellWord(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_.".unicodeScalars.contains(scalar))
        }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
