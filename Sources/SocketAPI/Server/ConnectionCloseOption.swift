import Foundation
import HTTPTransport
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The `close` connection option (RFC 9112 section 9.6): a request that carries it is the connection's last,
/// and the answer to it says so ("The server SHOULD send a "close" connection option in its final response on
/// that connection"), so a client sees the end of the connection as the end, not as an error.
///
/// Hummingbird ends a connection after answering a request whose `Connection` field is exactly `close`.
/// Connection options are case-insensitive tokens of a list (RFC 9110 section 7.6.1), so a field that lists
/// `close` in any spelling reaches Hummingbird as `close`; the final answer to that request (not an interim
/// 1xx) gets `Connection: close`. Requests may come pipelined, so each request's option waits in order for its
/// answer.
final class ConnectionCloseOption: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// For each request read and not answered yet, in order: whether it carried `close`.
    private var closing = CircularBuffer<Bool>(initialCapacity: 4)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        let field = head.headerFields[.connection]
        let close = field.map(Self.listsClose) ?? false
        closing.append(close)
        if close, field != "close" {
            head.headerFields[.connection] = "close"
            context.fireChannelRead(wrapInboundOut(.head(head)))
        } else {
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), head.status.kind != .informational, let close = closing.popFirst() else {
            context.write(data, promise: promise)
            return
        }
        if close {
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        } else {
            context.write(data, promise: promise)
        }
    }

    /// Whether a `Connection` field value lists the `close` option (``ConnectionOptions``, without copying the
    /// value: this runs for every request that has the field).
    static func listsClose(_ value: String) -> Bool {
        value == "close" || ConnectionOptions(value).contains { $0.caseInsensitiveEquals("close") }
    }
}
