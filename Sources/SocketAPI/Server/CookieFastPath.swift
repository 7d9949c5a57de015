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

    /// Counts an answer this handler or ``WireReplay`` sent, as the router counts its own.
    func counted() {
        answered.increment()
    }
}

/// Answers the socket's hot request on the connection's event loop: `GET /v1/sites/NAME/cookies` when the
/// Keeper's board holds a session fit to serve and the peer may read the site. Every other request, and any
/// such request the board cannot answer (a login to wait for, an error to explain, a bad parameter), goes on
/// to the router, which gives the same answer for the cases this handler takes (both make it with
/// ``CookieAnswer``).
///
/// Hummingbird hands each request to a task through an async sequence and back, which costs more than the
/// answer itself; this handler skips that for the one request clients make in loops. ``WireReplay``, at the
/// front of the pipeline, skips the HTTP decoder and encoder too when the same request comes again: this
/// handler tells it, through the ``ConnectionLedger``, what became of each head and how long an answer holds.
///
/// Answers stay in request order: while the router has a request of this connection in hand (counted by
/// ``ConnectionLifetime``, after this handler), every request goes to it.
final class CookieFastPath: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private static let prefix = "/v1/sites/"
    private static let suffix = "/cookies"
    private static let parameters: Set<String> = ["format", "url", "min_valid", "wait"]

    /// A request target, parsed: what the router would read from it.
    private struct Request {
        var site: String
        var format: CookieFormat
        var url: URL?
        var minValid: Duration?
    }

    private let parts: CookieFastPathParts
    private let ledger: ConnectionLedger
    private var peer: PeerCredentials?
    /// The rest of a request this handler answered (its body, its end) is dropped.
    private var discardingRequest = false
    private var unflushed = false

    init(parts: CookieFastPathParts, ledger: ConnectionLedger) {
        self.parts = parts
        self.ledger = ledger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            ledger.headsSeen += 1
            let answer = ledger.routedInFlight == 0 ? self.answer(head, context: context) : nil
            ledger.lastHead = ConnectionLedger.HeadOutcome(bodiless: Self.isBodiless(head), answer: answer)
            if answer != nil {
                discardingRequest = true
                return
            }
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

    /// Whether the next request starts right after this head (RFC 9112 section 6.3): no body announced, and
    /// no switch to another protocol.
    private static func isBodiless(_ head: HTTPRequest) -> Bool {
        head.method != .connect && head.headerFields[.transferEncoding] == nil && head.headerFields[.upgrade] == nil
            && (head.headerFields[.contentLength].map { $0 == "0" } ?? true)
    }

    /// Writes the answer to `head` when this handler can give it, and says how long it holds; nil leaves the
    /// request to the router.
    private func answer(_ head: HTTPRequest, context: ChannelHandlerContext) -> AnswerValidity? {
        // `Connection: close` ends the connection after the answer: the router's to do. `keep-alive` (Python's
        // requests sends it) changes nothing the router would do either, so it is answered here.
        let connection = head.headerFields[.connection]
        guard head.method == .get, let target = head.path, target.hasPrefix(Self.prefix),
              connection == nil || connection?.lowercased() == "keep-alive", let request = parse(target)
        else {
            return nil
        }
        if peer == nil { peer = parts.peer(context.channel) }
        guard let peer, let served = parts.keeper.servedNow(request.site, minValid: request.minValid),
              parts.access.allows(peer, site: served.site)
        else {
            return nil
        }
        let answer = CookieAnswer(served, format: request.format, url: request.url, now: parts.now)
        let body = context.channel.allocator.buffer(string: answer.text)
        let second = Int(Date().timeIntervalSince1970)
        let response = HTTPResponse(status: .ok, headerFields: [
            .contentType: answer.contentType, .contentLength: String(body.readableBytes),
            .date: CookieTime.httpDate(Date(timeIntervalSince1970: TimeInterval(second))),
        ])
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        unflushed = true
        parts.counted()
        ledger.lastActivity = context.eventLoop.now
        return AnswerValidity(
            site: request.site, generation: served.generation, minValid: request.minValid,
            fitUntil: served.fitUntil, changesAt: answer.changesAt, dateSecond: second)
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
                site: String(name), format: try query.format("format") ?? .header, url: try query.url("url"),
                minValid: try query.duration("min_valid"))
            _ = try query.duration("wait")
            return request
        } catch {
            return nil
        }
    }
}
