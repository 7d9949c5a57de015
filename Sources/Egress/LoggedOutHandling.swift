import SiteConfig

/// What the egress route does with a request whose answer was judged logged out, once the Keeper's one login
/// for the site has ended or was not needed (SPEC section 10).
public enum LoggedOutHandling: Sendable, Hashable {
    /// Send the request once more, with the renewed session; the first answer is dropped.
    case replay
    /// Answer with what the site said, marked `SessionKeeper-Session: renewed`: a new session is in place, and
    /// the client may send its request again.
    case answerRenewed
    /// Answer with what the site said: no new session could be had (the login failed, ran out of time, the site
    /// waits for a person), or the answer came to a replay already.
    case answerAsItIs

    /// The most request-body bytes the route keeps to send a request again: a larger body streams to the site
    /// and is not kept, and its request is answered rather than replayed.
    public static let replayBodyLimit = 1 << 20

    /// The header field that tells a client the session was renewed after its request met a logged-out answer.
    public static let sessionField = "SessionKeeper-Session"
    /// Its value.
    public static let renewedValue = "renewed"
    /// Its value (beside `renewed` when both apply, as a list: `renewed, body-not-kept`) when the request's body
    /// was small enough to keep for a replay but the daemon's memory for such bodies was taken: the body
    /// streamed to the site and the request is not sent again after a login.
    public static let bodyNotKeptValue = "body-not-kept"

    /// - Parameters:
    ///   - renewed: a session other than the one the request was sent with is served now.
    ///   - retry: the site's `egress.retry`.
    ///   - method: the request's method.
    ///   - bodyKept: the request's body (if any) is held whole, so it can be sent again.
    ///   - isReplay: the logged-out answer came to a replay: a request is sent again at most once.
    public static func decide(renewed: Bool, retry: EgressPolicy.Retry, method: String, bodyKept: Bool, isReplay: Bool) -> Self {
        guard renewed, !isReplay else { return .answerAsItIs }
        return retry.allowsReplay(of: method) && bodyKept ? .replay : .answerRenewed
    }
}
