import Foundation

/// Which kind of run an outcome is about: a failed login and a failed check mean different things.
public enum RunKind: Sendable, Hashable {
    case login
    case check
    case keepalive
}

/// What a login, `check` or `keepalive` run came to, in the terms the scheduler acts on (SPEC section 7). The
/// daemon classifies what a run reported into one of these (`RunOutcome.classify` in `Daemon`).
public enum RunOutcome: Sendable, Hashable {
    /// The run succeeded.
    case ok
    /// A check or keepalive found the session gone: log in again now.
    case loggedOut(reason: String)
    /// A login was refused in a way that looks permanent (an `expect` failed on a 2xx, 3xx or 4xx answer,
    /// or the essential cookies never came): the site needs a person; do not retry until its file or a
    /// secret changes, or a refresh is asked for.
    case credentialsRefused(reason: String)
    /// The site could not be reached or answered 5xx: keep the cookies, retry the check with backoff, try
    /// no login until it answers. `retryAfter` is the server's own `Retry-After`, when it sent one.
    case siteDown(reason: String, retryAfter: Duration?)
    /// The site answered 429: wait at least `retryAfter` (when sent) before the next request.
    case rateLimited(reason: String, retryAfter: Duration?)
    /// The site file or a credential cannot work as it stands (a template names something unknown, a
    /// secret is missing, a URL is invalid): like ``credentialsRefused(reason:)``, it waits for a change.
    case misconfigured(reason: String)
    /// Any other failure (a plugin, a redirect loop, an extraction on a changed page): exponential
    /// backoff with jitter, up to `retry.max`.
    case failed(reason: String)
    /// A `prompt` step got no answer within its timeout: the site needs a person, as after
    /// ``credentialsRefused(reason:)``, but nothing counts against the account.
    case promptTimedOut(reason: String)
    /// The run was cancelled (shutdown, a site removed).
    case cancelled

    /// The outcome's name in logs and status (`credentials-refused`, `site-down`, …).
    public var name: String {
        switch self {
        case .ok: "ok"
        case .loggedOut: "logged-out"
        case .credentialsRefused: "credentials-refused"
        case .siteDown: "site-down"
        case .rateLimited: "rate-limited"
        case .misconfigured: "misconfigured"
        case .failed: "failed"
        case .promptTimedOut: "prompt-timed-out"
        case .cancelled: "cancelled"
        }
    }

    /// The failure's message (already free of secrets); nil for ok and cancelled.
    public var reason: String? {
        switch self {
        case .ok, .cancelled: nil
        case .loggedOut(let reason), .credentialsRefused(let reason), .misconfigured(let reason), .failed(let reason),
             .promptTimedOut(let reason): reason
        case .siteDown(let reason, _), .rateLimited(let reason, _): reason
        }
    }

    /// Whether the session is known to be gone (a login is due now).
    public var sessionIsGone: Bool {
        if case .loggedOut = self { return true }
        return false
    }
}
