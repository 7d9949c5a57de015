import NIOCore
import NIOHTTPTypes
import SiteConfig

/// Every request's head and body must arrive within ``SocketServer/Limits/requestDeadline`` of its first byte:
/// a client that trickles them (a byte now and then, each one resetting any idle timer) is answered 408 and
/// its connection closed, so it holds its connection for that long at most.
///
/// It sits first in the pipeline, on the raw bytes, where a request's first byte is seen before the HTTP
/// decoder has a whole head. That the request is whole is told by ``RequestReceivedSignal``, after the
/// decoder, when the request's end passes. What happens after that (a `wait=` long-poll, an event stream) is
/// the route's time, not the client's: no deadline runs then. A route whose body streams on to a site
/// (``APIRoute/streamsRequestBody``) has the deadline for its head only: the signal says so once the head is
/// decoded, and the next request's deadline starts after this one's end.
final class RequestDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let deadline: Duration
    /// Runs while a request is arriving.
    private var timer: Scheduled<Void>?
    /// The request on the way has been read whole; the next byte starts the next request's deadline.
    private var receiving = false

    init(deadline: Duration) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !receiving {
            receiving = true
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: TimeAmount(deadline)) { [deadline] in
                let context = loopBound.value
                let error = APIError(
                    .requestTimeout, .requestTimeout,
                    "the request did not arrive whole within \(DurationText.format(deadline))")
                let channel = context.channel
                context.writeAndFlush(NIOAny(ByteBuffer(string: error.closingResponseBytes))).whenComplete { _ in
                    channel.close(promise: nil)
                }
            }
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        switch event {
        case is RequestReceivedSignal.Received:
            receiving = false
        case is RequestReceivedSignal.BodyStreams:
            // Still receiving: no new deadline until this request's end.
            break
        default:
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        timer?.cancel()
        timer = nil
        promise?.succeed()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }
}

/// Tells ``RequestDeadline`` (before the HTTP decoder) that a request's end has been decoded, or that its head
/// names a route whose body streams on to a site: outbound user events, which travel from here towards the
/// front of the pipeline.
final class RequestReceivedSignal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    struct Received {}
    struct BodyStreams {}

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let target = (head.path ?? "")[...]
            let path = target[..<(target.utf8.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)]
            if APIRoute.streamsRequestBody(path: path) {
                context.triggerUserOutboundEvent(BodyStreams(), promise: nil)
            }
        case .end:
            context.triggerUserOutboundEvent(Received(), promise: nil)
        case .body:
            break
        }
        context.fireChannelRead(data)
    }
}
