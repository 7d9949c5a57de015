import Foundation

/// Why a site needs a person (`needs-attention`), as the schedule knows it (SPEC sections 7 and 12).
public enum AttentionReason: String, Sendable, Hashable, CaseIterable {
    /// The site refused the credentials; logging in again with them would only lock the account.
    case credentialsRefused = "credentials-refused"
    /// `max_failures_per_day` failed logins in 24 hours; the daemon stopped trying.
    case dailyCapReached = "daily-cap-reached"
    /// A `login: manual` site's session died (expired, or the check found it logged out), or it never had one;
    /// only an import brings it back.
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

/// A `prompt` step waiting for a person's answer (SPEC section 12).
public struct PromptRequest: Sendable, Hashable {
    /// The step's `name`: the variable the answer becomes, and what `sessionkeeper answer SITE NAME` names.
    public var name: String
    /// The step's `message`: what the person is asked (from the site file, never a secret).
    public var message: String?
    /// When the prompt stops waiting (its `timeout`), when known.
    public var expiresAt: Date?

    public init(name: String, message: String? = nil, expiresAt: Date? = nil) {
        self.name = name
        self.message = message
        self.expiresAt = expiresAt
    }
}

/// One change of a site's state with what a person needs to know of it: what the daemon publishes (its
/// `KeeperEvent`s), the socket's event stream shows and the notifiers are fed.
public struct SiteStateChange: Sendable, Hashable {
    public var site: String
    /// When the state changed (wall clock).
    public var time: Date
    public var from: SiteSchedule.Phase
    public var to: SiteSchedule.Phase
    /// Why the site needs attention, when `to` is ``SiteSchedule/Phase/needsAttention``.
    public var reason: AttentionReason?
    /// What a person reads: the failure for needs-attention (free of secrets and of the pages the site
    /// answered), the prompt's message for waiting-for-person.
    public var message: String?
    /// The prompt that waits, when `to` is ``SiteSchedule/Phase/waitingForPerson``.
    public var prompt: PromptRequest?

    public init(
        site: String, time: Date, from: SiteSchedule.Phase, to: SiteSchedule.Phase, reason: AttentionReason? = nil,
        message: String? = nil, prompt: PromptRequest? = nil
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
