import CookieJar
import Daemon
import Egress
import Foundation
import HTTPTransport
import HTTPServer
import HTTPTypes
import Locking
import LoginFlow
import Logging
import NIOCore
import Platform
import Sessions
import SiteConfig

/// Sends a client's request to its site with the site's session, and hands back the site's answer as it comes
/// (SPEC section 10). The socket's egress route stands on it.
///
/// One exchange: the session fit to serve now (waiting up to ``sessionWait`` for a login when there is none);
/// the request with the client's method, header fields (``ProxyHeaders``) and body, the session's Cookie header
/// for its URL and the site's `http` settings; the answer's head. A `Set-Cookie` of the answer goes into the
/// session through the Keeper (as `set-cookie` does) and never to the client; a `Location` within `base_url`
/// comes back on the route. An answer the site's `egress.logged_out` rule calls logged out goes to the Keeper's
/// one login of the site (``Keeper/sessionRejected(_:usedLogin:reason:wait:)``), and then, by
/// ``LoggedOutHandling``, the request is sent once more or the answer goes to the client marked
/// `SessionKeeper-Session: renewed`.
///
/// Bodies stream both ways: the client's body is read only as fast as the site takes it, the site's only as fast
/// as the client takes it. What is held is bounded: a request body of at most
/// ``LoggedOutHandling/replayBodyLimit`` bytes (kept to send again) while ``replayMemory`` has room for it, and up
/// to ``LoggedOutRule/bodyPrefixLimit`` bytes of an answer whose rule must look into the body before it decides.
struct EgressForwarder: Sendable {
    /// The longest a request waits for a login: for a session when the site has none fit to serve, and after a
    /// logged-out answer.
    static let sessionWait: Duration = .seconds(30)

    let keeper: Keeper
    let client: any StreamingHTTPClient
    let metrics: DaemonMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    /// The bodies kept for a replay, all connections together.
    let replayMemory: ReplayMemory
    let derivations = SiteDerivations()

    /// What the client asked for, as the route read it.
    struct ClientRequest: Sendable {
        var site: SiteDefinition
        var method: String
        /// What follows the route's prefix in the request target: `/PATH?QUERY`, as the client wrote it.
        var target: Substring
        /// The route's own prefix, for `Location` (``ProxyAddress/prefix``).
        var prefix: String
        var headers: HTTPFields
        var body: ServerRequest.Body
        var peer: PeerCredentials
        /// The peer manages the site (``AccessControl/manages(_:)``): its answers' cookies are the session's
        /// as they come. A reader's change of whose session it is waits for the site's check
        /// (``Keeper/setCookies(_:url:values:byManager:)``).
        var byManager: Bool
    }

    /// The site's answer to `request`, or the daemon's JSON error when the request cannot be sent (a bad path
    /// 400, no session 503/504, the site unreachable 502, silent 504).
    func forward(_ request: ClientRequest) async throws -> ServerResponse {
        let started = ContinuousClock.now
        let site = request.site
        let audit = AuditRecord(peer: request.peer, site: site.name, method: request.method, path: Self.pathWithoutQuery(request.target))
        let derived = derivations.derived(for: site, prefix: request.prefix)
        let address = derived.address
        let url: URL
        do {
            url = try address.upstreamURL(request.target)
        } catch {
            throw refused(APIError(.badRequest, .badRequest, "the path to send to site '\(site.name)': \(error)"), audit: audit)
        }
        let judge = derived.judge
        let clientHeaders = Self.headers(request.headers)
        var headers = ProxyHeaders.request(clientHeaders, siteHeaders: site.http.headers, inspectsBody: site.egress.loggedOut.bodyText != nil)
        let options = TransportOptions(site: site.http)
        let body: OutgoingBody
        var session: ServedSession
        // Waiting for a login is not time the daemon adds.
        var upstreamTime: Duration = .zero
        do {
            body = try await Self.body(of: request, headers: clientHeaders, audit: audit, memory: replayMemory)
            let waitStarted = ContinuousClock.now
            session = try await servedSession(site.name, byManager: request.byManager)
            upstreamTime += ContinuousClock.now - waitStarted
        } catch {
            throw refused(error, audit: audit)
        }
        // The kept body is given back to the budget once the exchange is over (the answer streams without it).
        defer { if body.reserved > 0 { replayMemory.release(body.reserved) } }
        var isReplay = false
        while true {
            if let cookie = Self.cookieHeader(session, url: url, now: now) {
                headers.replaceOrAdd(name: "Cookie", value: cookie)
            } else {
                headers.remove(name: "Cookie")
            }
            let sent = StreamingRequest(method: request.method, url: url, headers: headers, body: body.requestBody)
            let exchangeStarted = ContinuousClock.now
            let answer: StreamingResponse
            do {
                answer = try await client.stream(sent, options: options)
            } catch {
                metrics.egress.answered(site: site.name, status: nil)
                audit.finish(status: nil, logger: logger, failure: "\(error.kind)")
                throw Self.apiError(error, site: site.name)
            }
            upstreamTime += ContinuousClock.now - exchangeStarted

            var prefix = Data()
            if let judge, judge.needsBody(status: answer.status, url: answer.url, headers: answer.headers, method: request.method) {
                do {
                    prefix = try await Self.readPrefix(of: answer.body, limit: LoggedOutRule.bodyPrefixLimit)
                } catch {
                    throw refused(error, audit: audit)
                }
            }
            guard let reason = judge?.judge(
                status: answer.status, url: answer.url, headers: answer.headers, bodyPrefix: prefix, method: request.method)
            else {
                await absorbCookies(of: answer, site: site.name, byManager: request.byManager)
                return respond(answer, prefix: prefix, request: request, address: address, audit: audit, renewed: false,
                               bodyNotKept: body.refusedForMemory, added: ContinuousClock.now - started - upstreamTime)
            }

            metrics.egress.loggedOut(site: site.name)
            // A replay is sent once: its answer goes to the client as it is, and a login it might start would
            // serve no one waiting for it (the next request that meets the dead session starts one).
            if isReplay {
                return respond(answer, prefix: prefix, request: request, address: address, audit: audit, renewed: false,
                               bodyNotKept: false, added: ContinuousClock.now - started - upstreamTime)
            }
            // The session the request carried is not served any more: the Keeper's one login replaces it.
            let waitStarted = ContinuousClock.now
            let renewed = await keeper.sessionRejected(site.name, usedLogin: session.record.lastLogin, reason: reason.description, wait: Self.sessionWait)
            upstreamTime += ContinuousClock.now - waitStarted
            if renewed != nil { audit.markLoggedIn() }
            let handling = LoggedOutHandling.decide(
                renewed: renewed != nil, retry: site.egress.retry, method: request.method, bodyKept: body.isKept, isReplay: isReplay)
            guard handling == .replay, let renewed else {
                return respond(answer, prefix: prefix, request: request, address: address, audit: audit, renewed: handling == .answerRenewed,
                               bodyNotKept: body.refusedForMemory, added: ContinuousClock.now - started - upstreamTime)
            }
            answer.body.cancel()
            session = renewed
            isReplay = true
            metrics.egress.replayed(site: site.name)
        }
    }

    /// `error`, once the request's audit line says the daemon answered it so.
    private func refused(_ error: APIError, audit: AuditRecord) -> APIError {
        audit.finish(status: Int(error.status.code), logger: logger, failure: error.code.rawValue)
        return error
    }

    // MARK: The session

    /// The session fit to serve now, from the Keeper's board; without one, as `cookies?wait=` gets one (a
    /// reader's request within the readers' budget of logins).
    private func servedSession(_ name: String, byManager: Bool) async throws(APIError) -> ServedSession {
        if let served = keeper.servedNow(name, minValid: nil) { return served }
        do {
            return try await keeper.session(for: name, minValid: nil, wait: Self.sessionWait, byManager: byManager)
        } catch {
            throw APIError(error)
        }
    }

    /// The Cookie header a request to `url` carries from `session`, by the jar's rules (RFC 6265 section 5.4).
    static func cookieHeader(_ session: ServedSession, url: URL, now: @escaping @Sendable () -> Date) -> String? {
        let storage = SiteJar.makeStorage(for: session.site, clock: now)
        for cookie in session.record.liveCookies(at: now()) { storage.setCookie(cookie) }
        return storage.cookieHeader(for: url)
    }

    /// Gives the answer's `Set-Cookie` values to the session. An answer judged logged out keeps its own: the
    /// session they speak of is the one a login replaces. On a reader's request, a change of whose session it is
    /// is adopted only once the site's check passes on it.
    private func absorbCookies(of answer: StreamingResponse, site: String, byManager: Bool) async {
        let values = answer.headers.values(for: "Set-Cookie")
        guard !values.isEmpty else { return }
        do {
            _ = try await keeper.setCookies(site, url: answer.url, values: values, byManager: byManager)
        } catch {
            logger.warning("cookies of a proxied answer not kept", metadata: ["site": "\(site)", "reason": "\(error)"])
        }
    }

    // MARK: The answer

    /// - Parameter bodyNotKept: the request's body was not kept for lack of ``replayMemory``: the answer's
    ///   `SessionKeeper-Session` says so.
    private func respond(
        _ answer: StreamingResponse, prefix: Data, request: ClientRequest, address: ProxyAddress, audit: AuditRecord, renewed: Bool,
        bodyNotKept: Bool, added: Duration
    ) -> ServerResponse {
        var fields = HTTPFields()
        for field in ProxyHeaders.response(answer.headers) {
            guard let name = HTTPField.Name(field.name) else { continue }
            var value = field.value
            if name == .location, let rewritten = address.clientLocation(value, requestURL: answer.url) { value = rewritten }
            fields.append(HTTPField(name: name, value: value))
        }
        let session = (renewed ? [LoggedOutHandling.renewedValue] : []) + (bodyNotKept ? [LoggedOutHandling.bodyNotKeptValue] : [])
        if !session.isEmpty, let name = HTTPField.Name(LoggedOutHandling.sessionField) { fields[name] = session.joined(separator: ", ") }
        metrics.egress.answered(site: request.site.name, status: answer.status)
        metrics.egress.added(site: request.site.name, duration: max(.zero, added))
        let logger = logger
        let upstream = answer.body
        let hasBody = LoggedOutJudge.hasBody(status: answer.status, method: request.method)
        let declaredLength = answer.headers["Content-Length"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return ServerResponse(
            status: HTTPTypes.HTTPResponse.Status(code: answer.status), headers: fields,
            body: .stream { writer in
                var sent = 0
                // Which side an error comes from: the site's body as it is read, the client as it is written to, or
                // the end of the exchange once the site's whole answer was handed on.
                var stage = TransferStage.readingSite
                do {
                    if hasBody {
                        if !prefix.isEmpty {
                            sent += prefix.count
                            stage = .writingClient
                            try await writer.write(ByteBuffer(bytes: prefix))
                            stage = .readingSite
                        }
                        for try await part in upstream {
                            sent += part.count
                            stage = .writingClient
                            try await writer.write(ByteBuffer(bytes: part))
                            stage = .readingSite
                        }
                    } else {
                        upstream.cancel()
                    }
                    stage = .ending
                    try await writer.finish()
                } catch {
                    upstream.cancel()
                    audit.addDown(sent)
                    audit.finish(status: answer.status, logger: logger, failure: stage.failure(
                        complete: !hasBody || declaredLength == sent))
                    throw error
                }
                audit.addDown(sent)
                audit.finish(status: answer.status, logger: logger)
            })
    }

    /// Where a proxied answer's body was when its transfer failed, for the audit line.
    enum TransferStage {
        case readingSite
        case writingClient
        case ending

        /// What the audit line says: the site's answer broke off, or the client went away; nothing when the client
        /// had the whole answer before it went (`complete`: no body, or every byte of its Content-Length; a client
        /// may close as soon as it has a complete empty redirect).
        func failure(complete: Bool) -> String? {
            switch self {
            case .readingSite: "the answer broke off"
            case .writingClient: "the client went away during the answer"
            case .ending: complete ? nil : "the client went away before the end of the answer"
            }
        }
    }

    /// Up to `limit` bytes from the start of `body` (more when the part that crosses the limit is longer).
    static func readPrefix(of body: HTTPTransport.ResponseBody, limit: Int) async throws(APIError) -> Data {
        var prefix = Data()
        var iterator = body.makeAsyncIterator()
        do {
            while prefix.count < limit, let part = try await iterator.next() { prefix.append(part) }
        } catch {
            throw APIError(.badGateway, .badGateway, "the site's answer broke off: \(error.kind)")
        }
        return prefix
    }

    // MARK: The request

    /// The request's body as the transport sends it, and whether it is held whole (so it can be sent again).
    struct OutgoingBody: Sendable {
        var requestBody: HTTPTransport.RequestBody
        var isKept: Bool
        /// The bytes of ``ReplayMemory`` it holds, to give back when the exchange is over.
        var reserved = 0
        /// It would have been kept but for a full ``ReplayMemory``.
        var refusedForMemory = false
    }

    /// A body of at most ``LoggedOutHandling/replayBodyLimit`` bytes (by its `Content-Length`) is read whole and
    /// kept while `memory` has room for it; a larger one, one of unknown length (chunked), or one `memory` has
    /// no room for streams to the site as the client sends it.
    static func body(
        of request: ClientRequest, headers: HTTPHeaders, audit: AuditRecord, memory: ReplayMemory
    ) async throws(APIError) -> OutgoingBody {
        let length = headers["Content-Length"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        let chunked = headers.values(for: "Transfer-Encoding").contains { $0.lowercased().contains("chunked") }
        guard length != nil || chunked else { return OutgoingBody(requestBody: .empty, isKept: true) }
        var refusedForMemory = false
        if let length, (0...Int64(LoggedOutHandling.replayBodyLimit)).contains(length) {
            if memory.reserve(Int(length)) {
                let body = request.body
                let buffer: ByteBuffer
                do {
                    buffer = try await body.collect(upTo: Int(length))
                } catch {
                    memory.release(Int(length))
                    throw APIError(.badRequest, .badRequest, "the request body could not be read: \(error)")
                }
                audit.addUp(buffer.readableBytes)
                return OutgoingBody(requestBody: .data(Data(buffer.readableBytesView)), isKept: true, reserved: Int(length))
            }
            refusedForMemory = true
        }
        let counted = request.body.map { buffer in
            audit.addUp(buffer.readableBytes)
            return Data(buffer.readableBytesView)
        }
        return OutgoingBody(requestBody: .stream(length: length, chunks: counted), isKept: false, refusedForMemory: refusedForMemory)
    }

    /// The request's fields as the transport's, in order.
    static func headers(_ fields: HTTPFields) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count)
        for field in fields { headers.add(name: field.name.rawName, value: field.value) }
        return headers
    }

    static func pathWithoutQuery(_ target: Substring) -> String {
        let path = target.prefix { $0 != "?" }
        return path.isEmpty ? "/" : String(path)
    }

    static func apiError(_ error: TransportError, site: String) -> APIError {
        switch error.kind {
        case .timeout: APIError(.gatewayTimeout, .timeout, "site '\(site)' did not answer in time")
        default: APIError(.badGateway, .badGateway, "site '\(site)' could not be reached: \(error.kind)")
        }
    }
}

/// What the forwarder derives from a site's definition for every request: the logged-out rule's judge (its
/// pattern compiled) and the route's address mapping (its `base_url` parsed). Made once per definition and
/// route, not once per request; a definition that changed (a reload) is derived again.
final class SiteDerivations: Sendable {
    struct Derived: Sendable {
        let rule: LoggedOutRule
        /// Nil when the rule's pattern does not compile (loading a site file checks it, so only a definition
        /// built in code can have one): no answer is then judged logged out.
        let judge: LoggedOutJudge?
        let address: ProxyAddress
    }

    /// More entries than any daemon keeps sites for (two routes each): past it, sites were renamed or removed
    /// many times over, and the cache starts again rather than grow.
    static let entryLimit = 50_000

    private let derived = Locked<[String: Derived]>([:])

    func derived(for site: SiteDefinition, prefix: String) -> Derived {
        let key = site.name + "\u{0}" + prefix
        if let known = derived.withLock({ $0[key] }), known.rule == site.egress.loggedOut, known.address.base == site.baseURL {
            return known
        }
        let made = Derived(
            rule: site.egress.loggedOut, judge: try? LoggedOutJudge(site.egress.loggedOut),
            address: ProxyAddress(base: site.baseURL, prefix: prefix))
        derived.withLock { cache in
            if cache.count >= Self.entryLimit { cache.removeAll() }
            cache[key] = made
        }
        return made
    }
}
