import CookieJar
import CoreMetrics
import Daemon
import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Platform

/// What every connection's ``CookieFastPath`` shares: the server's parts it reads.
struct CookieFastPathParts: Sendable {
    let keeper: Keeper
    let access: AccessControl
    /// The peer of a connection once its credentials are read (``PeerRegistry/known(_:)``).
    let peer: @Sendable (any Channel) -> PeerCredentials?
    /// `sessionkeeper_socket_requests_total{route="/v1/sites/{name}/cookies",status="200"}`.
    let answered: CoreMetrics.Counter
    /// The wall clock cookies are judged by.
    let now: @Sendable () -> Date
}

/// Answers the socket's hot request on the connection's event loop: `GET /v1/sites/NAME/cookies` when the
/// Keeper's board holds a session fit to serve and the peer may read the site. Every other request, and any
/// such request the board cannot answer (a login to wait for, an error to explain, a bad parameter), goes on
/// to the router, which gives the same answer for the cases this handler takes (both make it with
/// ``CookieAnswer``).
///
/// Hummingbird hands each request to a task through an async sequence and back, which costs more than the
/// answer itself; this handler skips that for the one request clients make in loops. It sits after
/// Hummingbird's connection-state handler, so the idle timeout and graceful shutdown count its answers as
/// they count the router's.
///
/// Answers stay in request order: while the router has a request of this connection in hand, every request
/// goes to it. The last answer is kept per connection and sent again as long as the board's entry is the
/// same publication and none of its cookies has expired since.
final class CookieFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private static let prefix = "/v1/sites/"
    private static let suffix = "/cookies"
    private static let parameters: Set<String> = ["format", "url", "min_valid", "wait"]

    /// A request target, parsed, with the answer last made for it.
    private struct Kept {
        var target: String
        var site: String
        var format: CookieFormat
        var url: URL?
        var minValid: TimeInterval
        /// The board publication the answer was made from.
        var generation: UInt64
        /// The publication's session is fit for a request at `t` exactly when `t + min_valid` is before this
        /// (``ServedSession/fitUntil``).
        var fitUntil: Date
        /// When the answer may next change (a cookie in it expires).
        var changesAt: Date?
        var body: ByteBuffer
        var contentType: String
        /// The answer's head, its `Date` field of `second`.
        var head: HTTPResponse
        var second: Int
    }

    private let parts: CookieFastPathParts
    private var peer: PeerCredentials?
    /// Requests handed to the router whose answer has not been written yet.
    private var routedInFlight = 0
    /// The rest of a request this handler answered (its body, its end) is dropped.
    private var discardingRequest = false
    private var unflushed = false
    private var kept: Kept?

    init(parts: CookieFastPathParts) {
        self.parts = parts
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if routedInFlight == 0, answer(head, context: context) {
                discardingRequest = true
                return
            }
            routedInFlight += 1
        case .body:
            if discardingRequest { return }
        case .end:
            if discardingRequest {
                discardingRequest = false
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routedInFlight -= 1 }
        context.write(data, promise: promise)
    }

    /// Writes the answer to `head` when this handler can give it; false leaves the request to the router.
    private func answer(_ head: HTTPRequest, context: ChannelHandlerContext) -> Bool {
        // `Connection` (close, or HTTP/1.0's keep-alive) changes how the connection ends: the router's.
        guard head.method == .get, let target = head.path, target.hasPrefix(Self.prefix), head.headerFields[.connection] == nil else {
            return false
        }
        if peer == nil { peer = parts.peer(context.channel) }
        guard let peer else { return false }
        let now = parts.now()
        if var kept, kept.target == target {
            if kept.generation == parts.keeper.board.generation(of: kept.site),
               now.addingTimeInterval(kept.minValid) < kept.fitUntil, kept.changesAt.map({ now < $0 }) ?? true
            {
                send(&kept, context: context, now: now)
                self.kept = kept
                return true
            }
            return answerAfresh(kept, peer: peer, context: context, now: now)
        }
        guard let parsed = parse(target) else { return false }
        return answerAfresh(parsed, peer: peer, context: context, now: now)
    }

    /// `target`'s site and parameters, when the router would answer them with cookies (else nil: its error
    /// is the router's to give).
    private func parse(_ target: String) -> Kept? {
        let uri = URI(target)
        let path = uri.path
        guard path.hasSuffix(Self.suffix), path.utf8.count > Self.prefix.utf8.count + Self.suffix.utf8.count else { return nil }
        let name = path.dropFirst(Self.prefix.count).dropLast(Self.suffix.count)
        // A name the router would decode or split is the router's.
        guard !name.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "%") }) else { return nil }
        do {
            let query = try Query(uri, allowed: Self.parameters)
            let format = try query.format("format") ?? .header
            let url = try query.url("url")
            let minValid = try query.duration("min_valid").map { $0 / .seconds(1) } ?? 0
            _ = try query.duration("wait")
            return Kept(
                target: target, site: String(name), format: format, url: url, minValid: minValid, generation: 0,
                fitUntil: .distantPast, changesAt: nil, body: ByteBuffer(), contentType: "", head: HTTPResponse(status: .ok), second: -1)
        } catch {
            return nil
        }
    }

    /// Reads the site's session from the board and, when it is fit and the peer may read it, answers with it.
    private func answerAfresh(_ request: Kept, peer: PeerCredentials, context: ChannelHandlerContext, now: Date) -> Bool {
        let minValid = request.minValid > 0 ? Duration.seconds(request.minValid) : nil
        guard let served = parts.keeper.servedNow(request.site, minValid: minValid), parts.access.allows(peer, site: served.site) else {
            return false
        }
        let answer = CookieAnswer(served, format: request.format, url: request.url, now: parts.now)
        var kept = request
        kept.generation = served.generation
        kept.fitUntil = served.fitUntil
        kept.changesAt = answer.changesAt
        kept.body = context.channel.allocator.buffer(string: answer.text)
        kept.contentType = answer.contentType
        kept.second = -1
        send(&kept, context: context, now: now)
        self.kept = kept
        return true
    }

    private func send(_ kept: inout Kept, context: ChannelHandlerContext, now: Date) {
        // The `Date` field (RFC 9110 section 6.6.1) has whole seconds: the head is made again once a second.
        let second = Int(Date().timeIntervalSince1970)
        if kept.second != second {
            kept.head = HTTPResponse(status: .ok, headerFields: [
                .contentType: kept.contentType, .contentLength: String(kept.body.readableBytes),
                .date: CookieTime.httpDate(Date(timeIntervalSince1970: TimeInterval(second))),
            ])
            kept.second = second
        }
        context.write(wrapOutboundOut(.head(kept.head)), promise: nil)
        context.write(wrapOutboundOut(.body(kept.body)), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        unflushed = true
        parts.answered.increment()
    }
}
