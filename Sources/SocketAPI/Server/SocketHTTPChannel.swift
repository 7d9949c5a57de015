import HummingbirdCore
import Logging
import NIOCore

/// One connection to the socket or to an egress loopback listener: admitted first (``ConnectionAdmission``: its
/// peer read and counted against the caps, or ``RefusedConnection``'s 503 and the end), then given
/// ``RequestDeadline`` on its raw bytes, then Hummingbird's `HTTP1Channel` (its decoder limits, idle timeout and
/// graceful shutdown) with the socket's handlers added after the conversion to HTTP types
/// (``RequestReceivedSignal``, ``ConnectionCloseOption``). The task that
/// serves the connection prefers the connection's event loop as its executor (``EventLoopExecutor``), so a
/// request does not cross threads between its bytes and its route.
struct SocketHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http1: HTTP1Channel
    let admission: ConnectionAdmission

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        admission.admit(channel).flatMapThrowing { refusal in
            if let refusal {
                try channel.pipeline.syncOperations.addHandler(RefusedConnection(answer: refusal.closingResponseBytes))
            } else {
                try channel.pipeline.syncOperations.addHandler(
                    RequestDeadline(deadline: admission.limits.requestDeadline, reportCutOff: admission.requestCutOff(on:)))
            }
        }.flatMap {
            http1.setup(channel: channel, logger: logger)
        }
    }

    /// The preference is taken here, inside the connection's task, and Hummingbird's accept loop stays on Swift's
    /// global executor: the task starts and ends there, off the loop. Swift's runtime keeps a task group's
    /// children in a list that it walks to add a child and again to remove a finished one, so with N connections
    /// open each new connection costs two walks of N. Beside 2,000 idle connections that was a fifth of the event
    /// loop's time when the accept loop ran on the loop too (and a new client's answer took 0.6 ms instead of
    /// 0.36 ms at the median: docs/BENCHMARKS.md); here it runs on a thread of the global executor.
    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await http1.handle(value: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 on the socket or an egress loopback listener, each connection a ``SocketHTTPChannel`` admitted by
    /// `admission` and bounded by its limits.
    /// - Parameter everyBodyStreams: every path is the egress route, whose request body streams on to the site
    ///   (a loopback listener): the request deadline holds each request's head only.
    static func socketHTTP1(admission: ConnectionAdmission, everyBodyStreams: Bool = false) -> HTTPServerBuilder {
        let limits = admission.limits
        let configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestReceivedSignal(everyBodyStreams: everyBodyStreams), ConnectionCloseOption()],
            idleTimeout: TimeAmount(limits.idleTimeout),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.maxHeaderFieldBytes, maxHeaderListSize: limits.maxHeaderListBytes,
                maxHeaderFieldCount: limits.maxHeaderFieldCount))
        return .init { responder in
            SocketHTTPChannel(
                http1: HTTP1Channel(responder: responder, configuration: configuration), admission: admission)
        }
    }
}
