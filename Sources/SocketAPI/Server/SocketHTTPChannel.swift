import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// One connection to the socket: HTTP/1.1 as Hummingbird's `HTTP1Channel` serves it, with the socket's own
/// handlers around the router.
///
/// The pipeline, from the socket in:
/// 1. ``WireReplay``: a repeated cookies request answered from the bytes of its last answer;
/// 2. NIO's HTTP/1 decoder and encoder, and the conversion to HTTP types (as `HTTP1Channel` sets them up,
///    with the decoder's limits from ``SocketServer/Limits``);
/// 3. the peer registry's handler (SO_PEERCRED, read once);
/// 4. ``CookieFastPath``: a cookies request answered on the event loop from the Keeper's board;
/// 5. ``ConnectionLifetime``: the idle timeout and graceful shutdown, in place of Hummingbird's
///    connection-state handler, which could not see the answers of the first and fourth;
/// 6. the router, through Hummingbird's async channel, in a task that prefers the connection's event loop as
///    its executor (``EventLoopExecutor``), so a routed request does not cross threads either.
struct SocketHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let limits: SocketServer.Limits
    let fastPath: CookieFastPathParts
    /// Handlers placed between the conversion to HTTP types and the fast path (the peer registry's).
    let additionalHandlers: @Sendable () -> [any ChannelHandler]

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        return channel.eventLoop.makeCompletedFuture {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = limits.maxHeaderFieldBytes
            decoderLimits.maxHeaderListSize = limits.maxHeaderListBytes
            decoderLimits.maxHeaderFieldCount = limits.maxHeaderFieldCount
            let operations = channel.pipeline.syncOperations
            try operations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
            try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try operations.addHandlers(additionalHandlers())
            let ledger = ConnectionLedger()
            try operations.addHandler(CookieFastPath(parts: fastPath, ledger: ledger))
            try operations.addHandler(ConnectionLifetime(ledger: ledger, idleTimeout: .init(limits.idleTimeout)))
            // A head longer than the decoder lets header fields be is the decoder's to judge.
            try operations.addHandler(
                WireReplay(parts: fastPath, ledger: ledger, maxHeadBytes: limits.maxHeaderListBytes), position: .first)
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await handleHTTP(asyncChannel: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 on the socket, each connection a ``SocketHTTPChannel``.
    static func socketHTTP1(
        limits: SocketServer.Limits, fastPath: CookieFastPathParts, additionalHandlers: @escaping @Sendable () -> [any ChannelHandler]
    ) -> HTTPServerBuilder {
        .init { responder in
            SocketHTTPChannel(responder: responder, limits: limits, fastPath: fastPath, additionalHandlers: additionalHandlers)
        }
    }
}
