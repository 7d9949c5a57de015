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

    /// Where the connection's current request is.
    private enum Phase {
        /// Between requests: the next byte starts one.
        case idle
        /// A request is arriving; it must be whole by this instant.
        case arriving(NIODeadline)
        /// The request's head is in and its body streams on to a site: no deadline until its end.
        case streaming
    }

    private let deadline: Duration
    private var phase = Phase.idle
    /// The one timer of the connection. It is not cancelled when a request ends: a keep-alive client's next
    /// request most often starts before it fires, and one timer for the connection costs less than one
    /// scheduled and cancelled for every request (NIO keeps its timers in a heap). When it fires it answers
    /// 408 if a request is late, waits for the request on the way, or ends.
    private var timer: Scheduled<Void>?

    /// Told of each request answered 408, with its connection (for the log: ``ConnectionAdmission/requestCutOff(on:)``).
    private let reportCutOff: @Sendable (any Channel) -> Void

    init(deadline: Duration, reportCutOff: @escaping @Sendable (any Channel) -> Void) {
        self.deadline = deadline
        self.reportCutOff = reportCutOff
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .idle = phase {
            let due = NIODeadline.now() + TimeAmount(deadline)
            phase = .arriving(due)
            if timer == nil { schedule(at: due, context: context) }
        }
        context.fireChannelRead(data)
    }

    private func schedule(at due: NIODeadline, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = loopBound.value
            handler.timerFired(context: context)
        }
    }

    private func timerFired(context: ChannelHandlerContext) {
        timer = nil
        guard case .arriving(let due) = phase else { return }
        guard NIODeadline.now() >= due else {
            schedule(at: due, context: context)
            return
        }
        let error = APIError(
            .requestTimeout, .requestTimeout,
            "the request did not arrive whole within \(DurationText.format(deadline))")
        let channel = context.channel
        reportCutOff(channel)
        context.writeAndFlush(NIOAny(ByteBuffer(string: error.closingResponseBytes))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        switch event {
        case is RequestReceivedSignal.Received:
            phase = .idle
        case is RequestReceivedSignal.BodyStreams:
            phase = .streaming
        default:
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
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

    /// Whether every request's body streams on to a site (a loopback listener, whose every path is the egress
    /// route), rather than only the requests whose path names ``APIRoute/proxy``.
    private let everyBodyStreams: Bool

    init(everyBodyStreams: Bool = false) {
        self.everyBodyStreams = everyBodyStreams
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head) where !everyBodyStreams:
            let target = (head.path ?? "")[...]
            let path = target[..<(target.utf8.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)]
            if APIRoute.streamsRequestBody(path: path) {
                context.triggerUserOutboundEvent(BodyStreams(), promise: nil)
            }
        case .head:
            context.triggerUserOutboundEvent(BodyStreams(), promise: nil)
        case .end:
            context.triggerUserOutboundEvent(Received(), promise: nil)
        case .body:
            break
        }
        context.fireChannelRead(data)
    }
}
