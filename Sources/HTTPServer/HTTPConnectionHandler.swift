import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Serves one connection's requests, one at a time (NIO's `HTTPServerPipelineHandler` in front holds a pipelined
/// request back until the answer before it has ended), on the connection's event loop: each head goes to the
/// ``HTTPResponder``; an answer given now is written at once, one given later is made in one task and written
/// back here.
///
/// A request is in progress from its decoded head until both its body has been read (or dropped) and its answer's
/// last write has completed. Only between requests does the idle timer run: an answer that takes long (a
/// `wait=` long-poll, a slow site, a slow reader of a large answer) is never cut as idleness. A request's body
/// goes to its reader with backpressure: while the reader has more parts than it asked for, the connection does
/// not read. When the answer is complete, the rest of an unread body is read and dropped, so the next request's
/// head can be read.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: any HTTPResponder
    private let configuration: ServerConfiguration

    /// The request in progress.
    private struct InFlight {
        let id: UInt64
        let isHead: Bool
        let keepAlive: Bool
        var body: BodyState
        var answer: AnswerState
    }

    private enum BodyState {
        /// Parts go to the reader.
        case reading(RequestBody.Producer.Source)
        /// Nobody reads the rest: parts are dropped until the end.
        case dropping
        /// The request's end has been read.
        case ended
    }

    private enum AnswerState {
        /// Not given yet.
        case waiting
        /// Its head is written; its body is being written.
        case writing
        /// Its end is being written.
        case ending
        /// Its last write completed.
        case ended
    }

    private var request: InFlight?
    private var lastID: UInt64 = 0
    /// The body's reader has as many parts as it asked for: reads wait.
    private var bodyPaused = false
    /// A read the channel asked for while ``bodyPaused``.
    private var readHeld = false
    /// The one idle timer of the connection. It is not cancelled when a request starts: a keep-alive client's
    /// requests come closer together than the timeout, and one timer for the connection costs less than one
    /// scheduled and cancelled for every request (NIO keeps its timers in a heap). When it fires it closes an
    /// idle connection whose time is up, waits again for one idle since more recently, or ends while a request
    /// is in progress (the request's end starts it again).
    private var idleTimer: Scheduled<Void>?
    /// Since when the connection has had no request in progress; nil while one is.
    private var idleSince: NIODeadline?
    private var isActive = false
    private var context: ChannelHandlerContext?

    init(responder: any HTTPResponder, configuration: ServerConfiguration) {
        self.responder = responder
        self.configuration = configuration
    }

    // MARK: The connection

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { becameActive(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        becameInactive()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        becameActive(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        becameInactive()
        context.fireChannelInactive()
    }

    private func becameActive(context: ChannelHandlerContext) {
        guard !isActive else { return }
        isActive = true
        scheduleIdleTimer(context: context)
    }

    private func becameInactive() {
        isActive = false
        idleTimer?.cancel()
        idleTimer = nil
        if case .reading(let source) = request?.body {
            source.finish(RequestBodyBrokeOff())
            request?.body = .dropping
        }
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            received(head, context: context)
        case .body(let part):
            guard case .reading(let source) = request?.body else { return }
            if case .stopProducing = source.yield(part) { bodyPaused = true }
        case .end:
            // Told even when the request is over already (no body, answered at once): the next byte starts the
            // next request's deadline.
            context.triggerUserOutboundEvent(RequestDeadline.RequestArrived(), promise: nil)
            guard var current = request else { return }
            if case .reading(let source) = current.body { source.finish() }
            current.body = .ended
            request = current
            finishIfComplete(context: context)
        }
    }

    private func received(_ nioHead: HTTPRequestHead, context: ChannelHandlerContext) {
        idleSince = nil
        let head: HTTPRequest
        do {
            head = try HTTPRequest(nioHead, secure: false, splitCookie: false)
        } catch {
            refuse(.malformed, context: context)
            return
        }
        lastID &+= 1
        let id = lastID
        let declaresBody = nioHead.headers.contains(name: "content-length") || nioHead.headers.contains(name: "transfer-encoding")
        // Without a body the request's end follows its head at once: it counts as read already.
        var bodyState = BodyState.ended
        var body = RequestBody.empty
        if declaresBody {
            let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            let made = RequestBody.Producer.makeSequence(
                backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8), finishOnDeinit: false,
                delegate: BodyReadDemand(
                    produceMoreHandler: {
                        eventLoop.execute { loopBound.value.handler.readerWantsMore(id: id) }
                    },
                    terminatedHandler: {
                        eventLoop.execute { loopBound.value.handler.readerLeft(id: id) }
                    }))
            body = RequestBody(producer: made.sequence)
            bodyState = .reading(made.source)
        }
        request = InFlight(id: id, isHead: head.method == .head, keepAlive: nioHead.isKeepAlive, body: bodyState, answer: .waiting)
        let serverRequest = ServerRequest(head: head, body: body, channel: context.channel)
        if responder.bodyStreams(serverRequest) {
            context.triggerUserOutboundEvent(RequestDeadline.BodyStreams(), promise: nil)
        }
        switch responder.respond(to: serverRequest) {
        case .now(let response):
            answer(response, id: id, context: context)
        case .later(let make):
            let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            Task {
                let response = await make()
                eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.answer(response, id: id, context: context)
                }
            }
        }
    }

    private func readerWantsMore(id: UInt64) {
        guard request?.id == id else { return }
        resumeReading()
    }

    /// The body's reader stopped before its end: the rest is dropped.
    private func readerLeft(id: UInt64) {
        guard request?.id == id, case .reading = request?.body else { return }
        request?.body = .dropping
        resumeReading()
    }

    private func resumeReading() {
        bodyPaused = false
        if readHeld, let context {
            readHeld = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if bodyPaused {
            readHeld = true
        } else {
            context.read()
        }
    }

    // MARK: Writing

    private func answer(_ response: ServerResponse, id: UInt64, context: ChannelHandlerContext) {
        guard isActive, var current = request, current.id == id, case .waiting = current.answer else { return }
        current.answer = .writing
        request = current
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: Int(response.status.code)), headers: HTTPHeaders(response.headers))
        head.headers.remove(name: "connection")
        if !current.keepAlive { head.headers.add(name: "Connection", value: "close") }
        if !head.headers.contains(name: "date") { head.headers.add(name: "Date", value: HTTPDate.now()) }
        switch response.body {
        case .bytes(let bytes):
            let bodyAllowed = Self.mayHaveBody(response.status)
            if bodyAllowed, !head.headers.contains(name: "content-length") {
                head.headers.add(name: "Content-Length", value: String(bytes.readableBytes))
            }
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if bodyAllowed, !current.isHead, bytes.readableBytes > 0 {
                context.write(wrapOutboundOut(.body(.byteBuffer(bytes))), promise: nil)
            }
            let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                let (handler, context) = loopBound.value
                handler.answerEnded(id: id, context: context)
            }
        case .stream(let produce):
            let suppressed = current.isHead || !Self.mayHaveBody(response.status)
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
            let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            let channel = context.channel
            let writer = ResponseBodyWriter(
                writePart: { part in
                    eventLoop.flatSubmit {
                        let (handler, context) = loopBound.value
                        return handler.writeBodyPart(part, id: id, suppressed: suppressed, context: context)
                    }
                },
                writeEnd: {
                    eventLoop.flatSubmit {
                        let (handler, context) = loopBound.value
                        return handler.endStream(id: id, context: context)
                    }
                })
            Task {
                do {
                    try await produce(writer)
                    try await writer.finish()
                } catch {
                    // The head is out: the answer cannot end well, so the connection ends.
                    channel.close(promise: nil)
                }
            }
        }
    }

    private func writeBodyPart(_ part: ByteBuffer, id: UInt64, suppressed: Bool, context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        guard isActive, let current = request, current.id == id, case .writing = current.answer else {
            return context.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        if suppressed || part.readableBytes == 0 { return context.eventLoop.makeSucceededVoidFuture() }
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(part))), promise: promise)
        return promise.futureResult
    }

    /// Writes a streamed answer's end, once (a producer may end it before it returns).
    private func endStream(id: UInt64, context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        guard isActive else { return context.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        // Another request in progress, or this one's end on its way: the end was written already.
        guard var current = request, current.id == id, case .writing = current.answer else {
            return context.eventLoop.makeSucceededVoidFuture()
        }
        current.answer = .ending
        request = current
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        written.futureResult.whenComplete { _ in
            let (handler, context) = loopBound.value
            handler.answerEnded(id: id, context: context)
        }
        return written.futureResult
    }

    private func answerEnded(id: UInt64, context: ChannelHandlerContext) {
        guard isActive, var current = request, current.id == id else { return }
        current.answer = .ended
        if case .reading(let source) = current.body {
            // The answer is complete without the rest of the body: nobody will read it.
            source.finish()
            current.body = .dropping
        }
        request = current
        resumeReading()
        finishIfComplete(context: context)
    }

    /// Ends the request once both its body and its answer have: closes a connection that asked for it, else waits
    /// for the next request with the idle timer running.
    private func finishIfComplete(context: ChannelHandlerContext) {
        guard let current = request, case .ended = current.body, case .ended = current.answer else { return }
        request = nil
        if !current.keepAlive {
            context.close(promise: nil)
            return
        }
        scheduleIdleTimer(context: context)
    }

    /// A status whose answer carries no body (RFC 9110 section 6.4.1: 1xx, 204, 304).
    private static func mayHaveBody(_ status: HTTPResponse.Status) -> Bool {
        !(status.kind == .informational || status == .noContent || status == .notModified)
    }

    // MARK: What the server answers itself

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        if request == nil {
            refuse(parserError == .headerOverflow ? .headerTooLarge : .malformed, context: context)
        } else {
            context.close(promise: nil)
        }
    }

    /// Answers `refusal` and closes the connection.
    private func refuse(_ refusal: ServerRefusal, context: ChannelHandlerContext) {
        let response = configuration.refusalAnswer(refusal)
        request = InFlight(id: lastID &+ 1, isHead: false, keepAlive: false, body: .dropping, answer: .writing)
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: Int(response.status.code)), headers: HTTPHeaders(response.headers))
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        var bytes = ByteBuffer()
        if case .bytes(let given) = response.body { bytes = given }
        head.headers.replaceOrAdd(name: "Content-Length", value: String(bytes.readableBytes))
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(bytes))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: Idleness

    /// The connection is idle from now: the timer runs (one is kept, see ``idleTimer``).
    private func scheduleIdleTimer(context: ChannelHandlerContext) {
        guard let timeout = configuration.idleTimeout, isActive else { return }
        idleSince = context.eventLoop.now
        guard idleTimer == nil, let since = idleSince else { return }
        armIdleTimer(at: since + TimeAmount(timeout), context: context)
    }

    private func armIdleTimer(at due: NIODeadline, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = loopBound.value
            handler.idleTimerFired(context: context)
        }
    }

    private func idleTimerFired(context: ChannelHandlerContext) {
        idleTimer = nil
        guard let timeout = configuration.idleTimeout, let since = idleSince, request == nil, isActive else { return }
        let due = since + TimeAmount(timeout)
        if context.eventLoop.now >= due {
            context.close(promise: nil)
        } else {
            armIdleTimer(at: due, context: context)
        }
    }
}
