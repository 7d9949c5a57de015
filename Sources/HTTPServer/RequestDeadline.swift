import NIOCore

/// Every request's head and body must arrive within ``ServerConfiguration/requestDeadline`` of its first byte: a
/// client that trickles them (a byte now and then) is answered ``ServerRefusal/requestTimeout`` and its connection
/// closed, so it holds its connection for that long at most.
///
/// It sits first in the pipeline, on the raw bytes, where a request's first byte is seen before the HTTP decoder
/// has a whole head. That the request is whole is told by the ``HTTPConnectionHandler``, after the decoder, when
/// the request's end passes (``RequestArrived``). What happens after that (a `wait=` long-poll, an event stream)
/// is the answer's time, not the client's. A request whose body streams on elsewhere has the deadline for its head
/// only (``BodyStreams``), and the next request's deadline starts after this one's end.
final class RequestDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The request's end has been decoded: outbound user events travel from the handler towards the front.
    struct RequestArrived {}
    /// The request's head is decoded and its body streams on: no deadline until its end.
    struct BodyStreams {}

    /// Where the connection's current request is.
    private enum Phase {
        /// Between requests: the next byte starts one.
        case idle
        /// A request is arriving; it must be whole by this instant.
        case arriving(NIODeadline)
        /// The request's head is in and its body streams on: no deadline until its end.
        case streaming
    }

    private let deadline: Duration
    private let answer: ServerResponse
    private let reportCutOff: @Sendable (any Channel) -> Void
    private var phase = Phase.idle
    /// The one timer of the connection. It is not cancelled when a request ends: a keep-alive client's next
    /// request most often starts before it fires, and one timer for the connection costs less than one scheduled
    /// and cancelled for every request (NIO keeps its timers in a heap). When it fires it answers if a request is
    /// late, waits for the request on the way, or ends.
    private var timer: Scheduled<Void>?

    init(deadline: Duration, answer: ServerResponse, reportCutOff: @escaping @Sendable (any Channel) -> Void) {
        self.deadline = deadline
        self.answer = answer
        self.reportCutOff = reportCutOff
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .idle = phase {
            let due = context.eventLoop.now + TimeAmount(deadline)
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
        guard context.eventLoop.now >= due else {
            schedule(at: due, context: context)
            return
        }
        let channel = context.channel
        reportCutOff(channel)
        context.writeAndFlush(NIOAny(ByteBuffer(string: RawAnswer.closing(answer)))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        switch event {
        case is RequestArrived:
            phase = .idle
        case is BodyStreams:
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

/// The whole pipeline of a connection refused at admission (``ConnectionGate``): its answer written as soon as
/// the connection is active, then the end. Its writing side is shut at once; its reading side stays open (what
/// the peer sends is dropped) until the peer closes or for ``linger`` at most, so a client that sends its request
/// after the answer came still reads the answer rather than a broken pipe.
final class RefusedConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// How long a refused connection's reading side stays open for the client to finish sending.
    static let linger = TimeAmount.seconds(1)

    private let answer: String
    private var closing: Scheduled<Void>?

    init(answer: ServerResponse) {
        self.answer = RawAnswer.closing(answer)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
        context.fireChannelActive()
    }

    private func send(context: ChannelHandlerContext) {
        guard closing == nil else { return }
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer(string: answer))).whenComplete { _ in channel.close(mode: .output, promise: nil) }
        closing = context.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        closing?.cancel()
        context.fireChannelInactive()
    }
}

/// An answer as HTTP/1.1 bytes, for what is written beside the HTTP pipeline (before the decoder has a request).
enum RawAnswer {
    /// `response` with its length and `Connection: close`; a streamed body is left out.
    static func closing(_ response: ServerResponse) -> String {
        var body = ""
        if case .bytes(let bytes) = response.body { body = String(buffer: bytes) }
        var text = "HTTP/1.1 \(response.status.code) \(response.status.reasonPhrase)\r\n"
        for field in response.headers where field.name != .contentLength && field.name != .connection {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        return text + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }
}
