import HummingbirdCore
import Logging
import NIOCore

/// One connection to the socket: admitted first (``ConnectionAdmission``: its peer read and counted against
/// the caps, or ``RefusedConnection``'s 503 and the end), then given ``RequestDeadline`` on its raw bytes, then Hummingbird's
/// `HTTP1Channel` (its decoder limits, idle timeout and graceful shutdown) with the socket's handlers added
/// after the conversion to HTTP types (``RequestReceivedSignal``, ``ConnectionCloseOption``). The task that
/// serves the connection runs on the socket's one event loop, where its bytes arrive: it is a child of the
/// server's task group, which ``SocketServer/run()`` starts with that loop as its preferred executor
/// (``EventLoopExecutor``), and a child task inherits the preference.
struct SocketHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http1: HTTP1Channel
    let admission: ConnectionAdmission
    let requestDeadline: Duration

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        admission.admit(channel).flatMapThrowing { refusal in
            if let refusal {
                try channel.pipeline.syncOperations.addHandler(RefusedConnection(answer: refusal.closingResponseBytes))
            } else {
                try channel.pipeline.syncOperations.addHandler(
                    RequestDeadline(deadline: requestDeadline, reportCutOff: admission.requestCutOff(on:)))
            }
        }.flatMap {
            http1.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 on the socket, each connection a ``SocketHTTPChannel`` bounded by `limits` and admitted by
    /// `admission`.
    static func socketHTTP1(limits: SocketServer.Limits, admission: ConnectionAdmission) -> HTTPServerBuilder {
        let configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestReceivedSignal(), ConnectionCloseOption()],
            idleTimeout: TimeAmount(limits.idleTimeout),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.maxHeaderFieldBytes, maxHeaderListSize: limits.maxHeaderListBytes,
                maxHeaderFieldCount: limits.maxHeaderFieldCount))
        return .init { responder in
            SocketHTTPChannel(
                http1: HTTP1Channel(responder: responder, configuration: configuration), admission: admission,
                requestDeadline: limits.requestDeadline)
        }
    }
}
