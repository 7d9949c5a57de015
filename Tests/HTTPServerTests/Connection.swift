import HTTPTypes
import Locking
import NIOCore
import NIOEmbedded
import Testing

@testable import HTTPServer

/// One connection's pipeline as the server sets it up, on NIO's testing channel: bytes in, bytes out, and time that
/// moves only when the test moves it (no sockets, no sleeps).
struct Connection {
    let channel: NIOAsyncTestingChannel

    init(configuration: ServerConfiguration, refusal: ServerResponse? = nil, responder: some HTTPResponder) async throws {
        channel = NIOAsyncTestingChannel()
        let channel = channel
        try await channel.testingEventLoop.executeInContext {
            try HTTPServer.setUp(channel, refusal: refusal, configuration: configuration, responder: responder)
        }
        try await channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/http-server-tests")).get()
    }

    func send(_ text: String) async throws {
        try await channel.writeInbound(ByteBuffer(string: text))
    }

    /// Everything written to the client so far.
    func received() async throws -> String {
        var text = ""
        while let part = try await channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: part) }
        return text
    }

    /// Waits until the client has been sent something that contains `marker`, and returns all of it.
    func receive(until marker: String) async throws -> String {
        var text = ""
        while !text.contains(marker) {
            let part = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
            text += String(buffer: part)
        }
        return text + (try await received())
    }

    func advance(_ amount: Duration) async {
        await channel.testingEventLoop.advanceTime(by: TimeAmount(amount))
    }

    var isOpen: Bool {
        get async throws { try await channel.testingEventLoop.submit { channel.isActive }.get() }
    }
}

/// Answers every request at once with its method and path, and `POST /ignore` without reading its body.
struct EchoPath: HTTPResponder {
    func respond(to request: ServerRequest) -> ServerReply {
        .now(ServerResponse(status: .ok, headers: [.contentType: "text/plain"], body: .text("\(request.method.rawValue) \(request.path)")))
    }
}

/// Answers each request once the test lets it (``release()``), for answers that take their time.
final class HeldAnswers: HTTPResponder, Sendable {
    private let gate: AsyncStream<Void>
    private let opener: AsyncStream<Void>.Continuation
    private let count = Locked(0)

    /// Requests whose answer waits now.
    var waiting: Int { count.withLock { $0 } }

    init() {
        (gate, opener) = AsyncStream.makeStream(of: Void.self)
    }

    func release() { opener.yield() }

    func respond(to request: ServerRequest) -> ServerReply {
        let gate = gate
        count.withLock { $0 += 1 }
        return .later {
            var waiting = gate.makeAsyncIterator()
            _ = await waiting.next()
            self.count.withLock { $0 -= 1 }
            return ServerResponse(status: .ok, body: .text("late"))
        }
    }
}

/// Streams each request's body back as the answer's body, part by part.
struct EchoBody: HTTPResponder {
    func respond(to request: ServerRequest) -> ServerReply {
        .now(ServerResponse(status: .ok, body: .stream { writer in
            for try await part in request.body { try await writer.write(part) }
        }))
    }

    func bodyStreams(_ request: ServerRequest) -> Bool { true }
}

/// Streams the request's path as its answer and ends the answer itself.
struct SelfEndingStream: HTTPResponder {
    func respond(to request: ServerRequest) -> ServerReply {
        let path = String(request.path)
        return .now(ServerResponse(status: .ok, body: .stream { writer in
            try await writer.write(ByteBuffer(string: path))
            try await writer.finish()
        }))
    }
}
