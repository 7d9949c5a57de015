import HummingbirdCore
import Logging
import NIOCore

/// One connection to the socket: Hummingbird's `HTTP1Channel` (its decoder limits, idle timeout and graceful
/// shutdown), with the socket's handlers added after the conversion to HTTP types (the peer registry's,
/// ``ConnectionCloseOption``), and the task that serves the connection preferring the connection's event loop
/// as its executor (``EventLoopExecutor``), so a request does not cross threads between its bytes and its route.
struct SocketHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http1: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        http1.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await http1.handle(value: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 on the socket, each connection a ``SocketHTTPChannel`` bounded by `limits`, with
    /// `additionalHandlers` (the peer registry's) after the conversion to HTTP types.
    static func socketHTTP1(
        limits: SocketServer.Limits, additionalHandlers: @escaping @Sendable () -> [any RemovableChannelHandler]
    ) -> HTTPServerBuilder {
        let configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: additionalHandlers() + [ConnectionCloseOption()],
            idleTimeout: TimeAmount(limits.idleTimeout),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.maxHeaderFieldBytes, maxHeaderListSize: limits.maxHeaderListBytes,
                maxHeaderFieldCount: limits.maxHeaderFieldCount))
        return .init { responder in
            SocketHTTPChannel(http1: HTTP1Channel(responder: responder, configuration: configuration))
        }
    }
}
