import HTTPTypes
import NIOCore

/// An answer: status, fields and body. A body of bytes is written with the head in one flush and its
/// `Content-Length`; a streamed body is written as its producer hands it over (chunked unless the fields give a
/// `Content-Length`), each part only once the connection took the one before.
public struct ServerResponse: Sendable {
    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: ResponseBody

    public init(status: HTTPResponse.Status, headers: HTTPFields = [:], body: ResponseBody = .bytes(ByteBuffer())) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What follows an answer's head.
public enum ResponseBody: Sendable {
    /// The whole body, known now.
    case bytes(ByteBuffer)
    /// A body written as it comes: the closure writes its parts and returns at the end. When it throws, the
    /// connection is closed (the answer cannot end well once its head is sent).
    case stream(@Sendable (ResponseBodyWriter) async throws -> Void)

    /// A body of UTF-8 text.
    public static func text(_ text: String) -> ResponseBody { .bytes(ByteBuffer(string: text)) }
}

/// Writes a streamed answer's parts on its connection's event loop.
public struct ResponseBodyWriter: Sendable {
    let writePart: @Sendable (ByteBuffer) -> EventLoopFuture<Void>
    let writeEnd: @Sendable () -> EventLoopFuture<Void>

    /// Sends `part` and returns once the connection has taken it (written to the socket), so a producer runs no
    /// further ahead of a slow client than one part.
    /// - Throws: the connection's error when it closed.
    public func write(_ part: ByteBuffer) async throws {
        try await writePart(part).get()
    }

    /// Ends the answer and returns once the connection has taken its end, for a producer that must know the
    /// client had all of it. Optional: the answer is ended when the producer returns.
    /// - Throws: the connection's error when it closed first.
    public func finish() async throws {
        try await writeEnd().get()
    }
}

/// How a server answers: called on the connection's event loop once for each request's head.
public protocol HTTPResponder: Sendable {
    /// The answer to `request`, given now (written at once, with no hop off the event loop) or later (made in one
    /// task, then written on the connection's event loop).
    func respond(to request: ServerRequest) -> ServerReply

    /// Whether `request`'s body streams on elsewhere, at the pace of whoever reads it, rather than being read
    /// whole by the responder: the request deadline then covers the head only. False unless a responder says so.
    func bodyStreams(_ request: ServerRequest) -> Bool
}

extension HTTPResponder {
    public func bodyStreams(_ request: ServerRequest) -> Bool { false }
}

/// An answer now, or the work that makes it.
public enum ServerReply: Sendable {
    /// Known on the event loop: written at once.
    case now(ServerResponse)
    /// Needs to wait (for an actor, a login, the request's body): made in one task, written on the event loop.
    case later(@Sendable () async -> ServerResponse)
}
