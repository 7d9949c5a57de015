import Foundation
import Logging
import Scheduler
import SiteConfig

// MARK: Needs-attention: why a site waits for a person and what that person can do

/// Why a site waits for a person, and what to do about it, in status and in the log. Never a value.
public struct Attention: Sendable, Hashable {
    /// The typed reason (its raw value is the notifiers' name for it).
    public var reason: AttentionReason
    /// What a person can do: which file or secret to fix, and what wakes the site.
    public var whatToDo: String

    public init(reason: AttentionReason, whatToDo: String) {
        self.reason = reason
        self.whatToDo = whatToDo
    }

    /// The advice for `reason` on `site`: the commands name the site, its file and the secrets it reads.
    public static func advice(for reason: AttentionReason, site: SiteDefinition) -> String {
        let name = site.name
        let retry = "`sessionkeeper refresh \(name)` tries again now"
        let secrets = Keeper.secretNames(of: site).sorted()
        let setSecrets = secrets.map { "`sessionkeeper secret set \($0)`" }.joined(separator: " or ")
        switch reason {
        case .credentialsRefused:
            let credentials = secrets.isEmpty
                ? "fix the credentials in \(site.file) or where they come from"
                : "fix the credentials (\(setSecrets) wakes the site) or \(site.file)"
            return "\(credentials); a change to the file wakes the site; \(retry)"
        case .misconfigured:
            let secret = secrets.isEmpty ? "" : ", or set a missing secret (\(setSecrets))"
            return "fix \(site.file) (a change wakes the site)\(secret); \(retry)"
        case .dailyCapReached:
            let secret = secrets.isEmpty ? "" : " or a secret it reads (\(setSecrets))"
            return "read the last error and fix \(site.file)\(secret): either change wakes the site; \(retry)"
        case .manualSessionDied:
            return "import a new session: `sessionkeeper import \(name) FILE` (or `--from-browser firefox`)"
        case .checkNeverPasses:
            return "fix the check in \(site.file) (try it with `sessionkeeper login \(name) --check` or `sessionkeeper probe \(name)`; "
                + "docs/SITES.md, \"Writing the check\"); a change to the file wakes the site; \(retry)"
        case .promptTimedOut:
            return "answer sooner: \(retry) and `sessionkeeper answer \(name)` when it asks (or answer from the notification)"
        case .other:
            return "read the last error and fix \(site.file) (a change wakes the site); \(retry)"
        }
    }
}

/// How a site's login ended: what a `refresh --wait` waited for.
public struct LoginAttempt: Sendable, Hashable {
    public var outcome: RunOutcome
    /// When it ended (wall time).
    public var endedAt: Date

    public init(outcome: RunOutcome, endedAt: Date) {
        self.outcome = outcome
        self.endedAt = endedAt
    }
}

extension Keeper {
    static func attention(of entry: Entry) -> Attention? {
        entry.schedule.attentionReason.map { Attention(reason: $0, whatToDo: Attention.advice(for: $0, site: entry.site)) }
    }

    /// One warning when a site starts to wait for a person: why, the error that put it there, and what to do.
    func logAttention(_ name: String) {
        guard let entry = entries[name], let attention = Self.attention(of: entry) else { return }
        var metadata: Logger.Metadata = ["site": "\(name)", "reason": "\(attention.reason.rawValue)", "what_to_do": "\(attention.whatToDo)"]
        if let error = entry.schedule.lastError { metadata["error"] = "\(error)" }
        logger.warning("site needs attention", metadata: metadata)
    }
}
