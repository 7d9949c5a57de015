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

    /// A request target, parsed: what the router would read from it.
    private struct Request {
        var target: String
        var site: String
        var format: CookieFormat
        var url: URL?
        var minValid: Duration?
    }

    /// The answer last made on this connection, and for which request.
    private struct Kept {
        var request: Request
        /// The board publication the answer was made from.
        var generation: UInt64
        /// The publication's session is fit for a request at `t` exactly when `t + min_valid` is before this
        /// (``ServedSession/fitUntil``).
        var fitUntil: Date
        /// When the answer may next change (a cookie in it expires).
        var changesAt: Date?
        var body: ByteBuffer
        var contentType: String
        /// The answer's head, its `Date` field of `second` (nil: not made yet).
        var head: (response: HTTPResponse, second: Int)?
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
        if var kept, kept.request.target == target {
            let horizon = now.addingTimeInterval(kept.request.minValid.map { $0 / .seconds(1) } ?? 0)
            if kept.generation == parts.keeper.board.generation(of: kept.request.site), horizon < kept.fitUntil,
               kept.changesAt.map({ now < $0 }) ?? true
            {
                send(&kept, context: context)
                self.kept = kept
                return true
            }
            return answerAfresh(kept.request, peer: peer, context: context)
        }
        guard let request = parse(target) else { return false }
        return answerAfresh(request, peer: peer, context: context)
    }

    /// `target`'s site and parameters, when the router would answer them with cookies (else nil: its error
    /// is the router's to give).
    private func parse(_ target: String) -> Request? {
        let uri = URI(target)
        let path = uri.path
        guard path.hasSuffix(Self.suffix), path.utf8.count > Self.prefix.utf8.count + Self.suffix.utf8.count else { return nil }
        let name = path.dropFirst(Self.prefix.count).dropLast(Self.suffix.count)
        // A name the router would decode or split is the router's.
        guard !name.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "%") }) else { return nil }
        do {
            let query = try Query(uri, allowed: Self.parameters)
            let request = Request(
                target: target, site: String(name), format: try query.format("format") ?? .header, url: try query.url("url"),
                minValid: try query.duration("min_valid"))
            _ = try query.duration("wait")
            return request
        } catch {
            return nil
        }
    }

    /// Reads the site's session from the board and, when it is fit and the peer may read it, answers with it.
    private func answerAfresh(_ request: Request, peer: PeerCredentials, context: ChannelHandlerContext) -> Bool {
        guard let served = parts.keeper.servedNow(request.site, minValid: request.minValid), parts.access.allows(peer, site: served.site)
        else {
            return false
        }
        let answer = CookieAnswer(served, format: request.format, url: request.url, now: parts.now)
        var kept = Kept(
            request: request, generation: served.generation, fitUntil: served.fitUntil, changesAt: answer.changesAt,
            body: context.channel.allocator.buffer(string: answer.text), contentType: answer.contentType, head: nil)
        send(&kept, context: context)
        self.kept = kept
        return true
    }

    private func send(_ kept: inout Kept, context: ChannelHandlerContext) {
        // The `Date` field (RFC 9110 section 6.6.1) has whole seconds: the head is made again once a second.
        let second = Int(Date().timeIntervalSince1970)
        let head: HTTPResponse
        if let made = kept.head, made.second == second {
            head = made.response
        } else {
            head = HTTPResponse(status: .ok, headerFields: [
                .contentType: kept.contentType, .contentLength: String(kept.body.readableBytes),
                .date: CookieTime.httpDate(Date(timeIntervalSince1970: TimeInterval(second))),
            ])
            kept.head = (head, second)
        }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(kept.body)), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        unflushed = true
        parts.answered.increment()
    }
}
