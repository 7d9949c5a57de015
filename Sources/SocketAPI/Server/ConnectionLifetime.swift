import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// Ends a socket connection when it should end: after `idleTimeout` with no request in progress, and, when the
/// server shuts down gracefully, as soon as no answer is owed. It sits after ``CookieFastPath``, so it sees the
/// router's requests; the fast paths (``CookieFastPath``, ``WireReplay``) answer at once and note their
/// answers in the ``ConnectionLedger`` as activity.
///
/// Hummingbird's own connection-state handler does this for the requests it sees; the answers that
/// ``WireReplay`` sends as bytes never reach a handler of HTTP parts, so the connection needs one that reads the
/// ledger. Same rules: a request's head arriving byte by byte counts as no request (a client cannot hold a
/// connection by trickling a head), and a request the router is answering (a `wait=` for a login) keeps the
/// connection however long it takes.
final class ConnectionLifetime: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let ledger: ConnectionLedger
    private let idleTimeout: TimeAmount
    /// A request's head has been read and its end has not.
    private var readingRequest = false
    /// Graceful shutdown asked for the connection to end once no answer is owed.
    private var closeWhenAnswered = false
    private var timer: Scheduled<Void>?

    init(ledger: ConnectionLedger, idleTimeout: TimeAmount) {
        self.ledger = ledger
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startTimer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        ledger.lastActivity = context.eventLoop.now
        switch unwrapInboundIn(data) {
        case .head:
            readingRequest = true
            ledger.routedInFlight += 1
        case .body:
            break
        case .end:
            readingRequest = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        // (An answer to a request the decoder could not read has no head read before it.)
        ledger.routedInFlight = max(0, ledger.routedInFlight - 1)
        ledger.lastActivity = context.eventLoop.now
        if closeWhenAnswered, ledger.routedInFlight == 0 {
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
        } else {
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // The fast paths answer within the read that brought the request, so only the router can owe one.
        if ledger.routedInFlight == 0 {
            context.close(promise: nil)
        } else {
            closeWhenAnswered = true
        }
    }

    private func startTimer(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        ledger.lastActivity = context.eventLoop.now
        schedule(at: ledger.lastActivity + idleTimeout, context: context)
    }

    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            // The router is answering a request read whole: that takes as long as it takes.
            if ledger.routedInFlight > 0, !readingRequest {
                schedule(at: context.eventLoop.now + idleTimeout, context: context)
                return
            }
            let due = ledger.lastActivity + idleTimeout
            if due <= context.eventLoop.now {
                context.close(promise: nil)
            } else {
                schedule(at: due, context: context)
            }
        }
    }
}
