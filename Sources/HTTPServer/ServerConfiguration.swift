import HTTPTypes
import NIOCore

/// Bounds on what one connection may make the server hold, and the answers the server gives by itself.
public struct ServerConfiguration: Sendable {
    /// A request's head and body must arrive within this of its first byte, else ``ServerRefusal/requestTimeout``
    /// and the connection is closed. A body the responder streams on elsewhere (``HTTPResponder/bodyStreams(_:)``)
    /// is not counted; the time the answer takes is not either. Nil: no deadline.
    public var requestDeadline: Duration?
    /// A connection with no request in progress for this long is closed. A request is in progress from its
    /// decoded head to the end of its answer's last write, so a slow answer never counts as idleness; a head
    /// arriving byte by byte does (``requestDeadline`` bounds that). Nil: no idle timeout.
    public var idleTimeout: Duration?
    /// Largest single header field (name and value), all header fields together, and most fields in one head.
    public var maxHeaderFieldBytes = 8 * 1024
    public var maxHeaderListBytes = 16 * 1024
    public var maxHeaderFieldCount = 64
    /// The answer the server gives by itself (a request past its deadline, a head it cannot read), followed by
    /// the end of the connection.
    public var refusalAnswer: @Sendable (ServerRefusal) -> ServerResponse
    /// Told of each request cut off at ``requestDeadline``, with its connection (for a log line).
    public var onRequestCutOff: @Sendable (any Channel) -> Void

    public init(
        requestDeadline: Duration? = nil, idleTimeout: Duration? = nil,
        refusalAnswer: @escaping @Sendable (ServerRefusal) -> ServerResponse = ServerRefusal.plainText,
        onRequestCutOff: @escaping @Sendable (any Channel) -> Void = { _ in }
    ) {
        self.requestDeadline = requestDeadline
        self.idleTimeout = idleTimeout
        self.refusalAnswer = refusalAnswer
        self.onRequestCutOff = onRequestCutOff
    }
}

/// Why the server answered a request by itself, then closed its connection.
public enum ServerRefusal: Sendable, Hashable {
    /// The request did not arrive whole within the deadline (408).
    case requestTimeout(Duration)
    /// The head's fields are larger or more than the server reads (431).
    case headerTooLarge
    /// The bytes are not an HTTP/1.1 request (400).
    case malformed

    /// The status each refusal answers with.
    public var status: HTTPResponse.Status {
        switch self {
        case .requestTimeout: .requestTimeout
        case .headerTooLarge: .requestHeaderFieldsTooLarge
        case .malformed: .badRequest
        }
    }

    /// A one-line text/plain answer.
    @Sendable public static func plainText(_ refusal: ServerRefusal) -> ServerResponse {
        let text: String
        switch refusal {
        case .requestTimeout: text = "the request did not arrive whole in time\n"
        case .headerTooLarge: text = "the request's header fields are too large\n"
        case .malformed: text = "the request is not HTTP/1.1\n"
        }
        return ServerResponse(status: refusal.status, headers: [.contentType: "text/plain; charset=utf-8"], body: .text(text))
    }
}

/// Decides, when a connection is accepted and before any of its bytes is read, whether it is served: the
/// place for reading the peer's credentials and counting connections against caps.
public protocol ConnectionGate: Sendable {
    /// Nil to serve `channel`; else the answer it gets (as soon as it is active) before it is closed. Called on
    /// the channel's event loop; the future must not fail.
    func admit(_ channel: any Channel) -> EventLoopFuture<ServerResponse?>
}

/// Every connection is served.
public struct OpenGate: ConnectionGate {
    public init() {}
    public func admit(_ channel: any Channel) -> EventLoopFuture<ServerResponse?> {
        channel.eventLoop.makeSucceededFuture(nil)
    }
}
