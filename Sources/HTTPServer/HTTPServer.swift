import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 server on SwiftNIO's own pipeline, listening on a Unix-domain socket or a TCP address.
///
/// Each accepted connection passes its ``ConnectionGate`` first (before any byte of it is read), then gets its
/// pipeline: ``RequestDeadline`` on the raw bytes, NIO's HTTP/1 encoder and decoder (with the header limits of
/// ``ServerConfiguration``), NIO's `HTTPServerPipelineHandler` (one request at a time, graceful quiescing), and
/// one ``HTTPConnectionHandler`` that hands each request to the ``HTTPResponder`` and writes its answer. No task
/// runs per connection, and none per request unless its answer must wait.
public final class HTTPServer: Sendable {
    /// Where a server listens.
    public enum Address: Sendable, Hashable, CustomStringConvertible {
        /// A Unix-domain socket; the path must not exist.
        case unixDomainSocket(path: String)
        /// A TCP address; port 0 for a free one.
        case tcp(host: String, port: Int)

        public var description: String {
            switch self {
            case .unixDomainSocket(let path): path
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            }
        }
    }

    private let channel: any Channel
    private let quiescing: ServerQuiescingHelper

    private init(channel: any Channel, quiescing: ServerQuiescingHelper) {
        self.channel = channel
        self.quiescing = quiescing
    }

    /// The address the server is bound to (with the real port when port 0 was asked for).
    public var localAddress: SocketAddress? { channel.localAddress }

    /// The port of a TCP server; nil for a Unix-domain socket.
    public var port: Int? { channel.localAddress?.port }

    /// Binds `address` and serves it on `group` until ``shutdown()``.
    /// - Throws: the system's error when the address cannot be bound.
    public static func start(
        address: Address, group: any EventLoopGroup, configuration: ServerConfiguration = ServerConfiguration(),
        gate: any ConnectionGate = OpenGate(), responder: any HTTPResponder
    ) async throws -> HTTPServer {
        let quiescing = ServerQuiescingHelper(group: group)
        var bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelInitializer { channel in
                gate.admit(channel).flatMapThrowing { refusal in
                    try Self.setUp(channel, refusal: refusal, configuration: configuration, responder: responder)
                }
            }
        let channel: any Channel
        switch address {
        case .unixDomainSocket(let path):
            channel = try await bootstrap.bind(unixDomainSocketPath: path).get()
        case .tcp(let host, let port):
            bootstrap = bootstrap
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            channel = try await bootstrap.bind(host: host, port: port).get()
        }
        return HTTPServer(channel: channel, quiescing: quiescing)
    }

    /// A connection's pipeline: its refusal alone, or the handlers that serve it.
    static func setUp(
        _ channel: any Channel, refusal: ServerResponse?, configuration: ServerConfiguration, responder: any HTTPResponder
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        if let refusal {
            try pipeline.addHandler(RefusedConnection(answer: refusal))
            return
        }
        if let deadline = configuration.requestDeadline {
            try pipeline.addHandler(RequestDeadline(
                deadline: deadline, answer: configuration.refusalAnswer(.requestTimeout(deadline)),
                reportCutOff: configuration.onRequestCutOff))
        }
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = configuration.maxHeaderFieldBytes
        limits.maxHeaderListSize = configuration.maxHeaderListBytes
        limits.maxHeaderFieldCount = configuration.maxHeaderFieldCount
        try pipeline.addHandler(HTTPResponseEncoder())
        try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(
            leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop, limitConfiguration: limits)))
        try pipeline.addHandler(HTTPServerPipelineHandler())
        try pipeline.addHandler(HTTPConnectionHandler(responder: responder, configuration: configuration))
    }

    /// Stops accepting connections, closes the idle ones, lets each request in progress finish its answer (then
    /// closes its connection), and returns when every connection is closed. Calling it again is harmless.
    public func shutdown() async {
        let done = channel.eventLoop.makePromise(of: Void.self)
        quiescing.initiateShutdown(promise: done)
        try? await done.futureResult.get()
    }
}
