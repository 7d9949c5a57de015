import NIOCore

/// What the handlers of one socket connection tell each other about it: ``WireReplay`` at the front,
/// ``CookieFastPath`` on request heads, ``ConnectionLifetime`` on the router's requests. Made with the
/// connection's pipeline and only ever touched on its event loop, like the handlers themselves.
final class ConnectionLedger {
    /// Requests handed to the router whose answer has not ended yet (counted by ``ConnectionLifetime``).
    /// While there is one, every later request goes to the router too, so answers leave in request order.
    var routedInFlight = 0
    /// When a request part was last read or an answer last ended, by the event loop's clock. The idle timeout
    /// counts from here (``ConnectionLifetime`` sets it when the connection becomes active).
    var lastActivity: NIODeadline = .uptimeNanoseconds(0)
    /// Request heads ``CookieFastPath`` has seen on this connection.
    var headsSeen = 0
    /// What became of the last of them.
    var lastHead: HeadOutcome?

    /// A request head as the HTTP handlers read it.
    struct HeadOutcome {
        /// The request has no body and nothing after its head is part of it: the next request starts right
        /// after the head (RFC 9112 section 6.3: no Content-Length other than 0, no Transfer-Encoding, no
        /// upgrade, not CONNECT).
        var bodiless: Bool
        /// Set when ``CookieFastPath`` answered the request itself: when that answer may be sent again.
        var answer: AnswerValidity?
    }
}
