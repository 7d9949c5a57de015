import Foundation
import LoginFlow

/// What "log in one site" reports as it goes. The CLI prints these; the daemon logs them. Nothing in an
/// event holds a cookie value or a secret: cookies appear by name, flow events are already redacted by the
/// engine, and credential commands' output is masked by the resolver before it gets here.
public enum SessionEvent: Sendable {
    /// Something the flow engine reported (a request, a step, a plugin's stderr line, a warning).
    case flow(FlowEvent)
    /// The login starts from these stored cookies (SPEC section 3, `cookies.keep_on_login`).
    case restored(site: String, cookieNames: [String], leftOut: Int, lastLogin: Date)
    /// The login starts from an empty jar, and why.
    case startingEmpty(site: String, reason: EmptyStart)
    /// The stored session could not be read; the login starts from an empty jar and, if it succeeds,
    /// replaces the unreadable record.
    case restoreFailed(site: String, problem: String)
    /// The new session was stored (`leftOut`: expired cookies, and session cookies when the site keeps none).
    case stored(site: String, cookieNames: [String], leftOut: Int)
    /// An `outputs:` file was rewritten.
    case outputWritten(site: String, path: String, cookieCount: Int)
    /// An `outputs:` file could not be written; the session is stored all the same.
    case outputFailed(site: String, path: String, problem: String)

    /// Why a login starts without stored cookies.
    public enum EmptyStart: Sendable, Hashable {
        /// The caller asked for it (`login --fresh`).
        case fresh
        /// The store has no session for the site.
        case nothingStored
        /// `keep_on_login: none`.
        case keepNone
    }
}

/// Receives ``SessionEvent``s synchronously, in order, from the task running the login.
public typealias SessionEventSink = @Sendable (SessionEvent) -> Void
