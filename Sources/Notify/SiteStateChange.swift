import Foundation

/// A site's state as status, the socket and events name it (SPEC sections 7 and 12).
public enum SiteState: String, Sendable, Hashable, CaseIterable {
    case valid
    case loggingIn = "logging-in"
    case refreshing
    case failed
    case needsAttention = "needs-attention"
    case waitingForPerson = "waiting-for-person"
    case disabled
}

/// Why a site needs a person, as far as the daemon can tell.
public enum AttentionReason: String, Sendable, Hashable, CaseIterable {
    /// The site refused the credentials; logging in again with them would only lock the account.
    case credentialsRefused = "credentials-refused"
    /// `max_failures_per_day` failed logins in 24 hours; the daemon stopped trying.
    case dailyCapReached = "daily-cap-reached"
    /// A `login: manual` site's session died (expired, or the check found it logged out); only a new import
    /// brings it back.
    case manualSessionDied = "manual-session-died"
    /// Every login succeeds but the check that follows never passes.
    case checkNeverPasses = "check-never-passes"
    /// The site file asks for something that cannot work (a credential that does not resolve, a plugin that
    /// is missing).
    case misconfigured
    /// Nobody answered a prompt within its timeout.
    case promptTimedOut = "prompt-timed-out"
    /// Anything else that stopped the daemon from trying.
    case other

    /// The reason in a few words, for a notification's text.
    public var summary: String {
        switch self {
        case .credentialsRefused: "the site refused the credentials"
        case .dailyCapReached: "too many failed logins today (max_failures_per_day)"
        case .manualSessionDied: "the imported session ended; import a new one"
        case .checkNeverPasses: "logins succeed but the check never passes"
        case .misconfigured: "the site's configuration cannot work"
        case .promptTimedOut: "nobody answered the prompt in time"
        case .other: "the daemon stopped trying to log in"
        }
    }
}

/// A prompt step waiting for a person's answer.
public struct PromptRequest: Sendable, Hashable {
    /// The step's `name`: the variable the answer becomes, and what `sessionkeeper answer SITE NAME` names.
    public var name: String
    /// When the prompt stops waiting (its `timeout`), when known.
    public var expiresAt: Date?

    public init(name: String, expiresAt: Date? = nil) {
        self.name = name
        self.expiresAt = expiresAt
    }
}

/// One change of a site's state: what the notifiers are fed (from the daemon's keeper events).
public struct SiteStateChange: Sendable, Hashable {
    public var site: String
    /// When the state changed (wall clock).
    public var time: Date
    public var from: SiteState
    public var to: SiteState
    /// Why the site needs attention, when `to` is ``SiteState/needsAttention``.
    public var reason: AttentionReason?
    /// What a person reads: the failure for needs-attention (already free of secrets, as the daemon logs
    /// it), the prompt's message for waiting-for-person.
    public var message: String?
    /// The prompt that waits, when `to` is ``SiteState/waitingForPerson``.
    public var prompt: PromptRequest?

    public init(
        site: String, time: Date, from: SiteState, to: SiteState, reason: AttentionReason? = nil, message: String? = nil,
        prompt: PromptRequest? = nil
    ) {
        self.site = site
        self.time = time
        self.from = from
        self.to = to
        self.reason = reason
        self.message = message
        self.prompt = prompt
    }
}
