import CookieJar
import Daemon
import Foundation
import HTTPServer
import HTTPTypes
import JSON
import Logging
import NIOCore
import Scheduler
import Sessions
import SiteConfig
import SocketRoutes

/// The routes of SPEC section 8. Every site route checks the peer against the site's access first (404 for a
/// site that does not exist and, byte for byte the same, for one the peer may not read), then whether the
/// route needs a manager (403), then its query parameters (400 naming the parameter), then asks the ``Keeper``.
struct APIRoutes: Sendable {
    let keeper: Keeper
    let access: AccessControl
    let hub: EventHub
    let metrics: DaemonMetrics?
    let reload: @Sendable () -> Void
    let limits: SocketServer.Limits
    let started: ContinuousClock.Instant
    let logger: Logger
    /// The wall clock cookies are judged by.
    let now: @Sendable () -> Date
    /// What the egress route sends requests with; nil when the server has no HTTP client (404).
    let egress: EgressForwarder?
    /// The loopback listeners, for a site's `listen_error`.
    let listeners: EgressListeners?

    /// The answer of a route that needs no hop off the event loop, or nil when it must wait
    /// (``answer(_:_:_:)``): a session fit to serve is read from the Keeper's board, the event stream subscribes
    /// to the hub, and a reload is a signal.
    func answerNow(_ route: SocketRoute, _ request: ServerRequest, _ context: APIContext) throws(APIError) -> ServerResponse? {
        switch route {
        case .cookies: try cookiesNow(request, context)
        case .events: try events(request, context)
        case .reload: try reload(request, context)
        default: nil
        }
    }

    /// The answer of `route`, for what ``answerNow(_:_:_:)`` did not answer.
    func answer(_ route: SocketRoute, _ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        switch route {
        case .health: try await health(request)
        case .sites: try await sites(request, context)
        case .site: try await site(request, context)
        case .cookies: try await cookies(request, context)
        case .refresh: try await refresh(request, context)
        case .report: try await report(request, context)
        case .setCookie: try await setCookie(request, context)
        case .events: try events(request, context)
        case .reload: try reload(request, context)
        case .metrics: try await metricsText(request, context)
        case .answer: try await answerPrompt(request, context)
        case .proxy: try await proxy(request, context)
        }
    }

    // MARK: Routes

    private func health(_ request: ServerRequest) async throws -> ServerResponse {
        _ = try RouteQuery(request, for: .health)
        let uptime = (ContinuousClock.now - started).components.seconds
        var members: [(key: String, value: JSONValue)] = [
            ("status", .string("ok")), ("version", .string(SessionKeeperVersion.string)), ("uptime_s", .number(String(uptime))),
        ]
        // A fleet keeper whose database is gone still serves what it holds: it is up, and says what it lacks.
        if let fleet = await keeper.fleetState() { members.append(("store", SiteWire.store(fleet))) }
        return WireBody.json(.object(members))
    }

    private func sites(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        _ = try RouteQuery(request, for: .sites)
        let snapshots = await keeper.snapshots()
        await access.resolveMissingGroups(of: snapshots.map(\.site))
        let visible = snapshots.filter { access.allows(context.peer, site: $0.site) }
        var members: [(key: String, value: JSONValue)] = [("sites", .array(visible.map { SiteWire.site($0.status, listenError: listeners?.problem(of: $0.site.name)) }))]
        // A file that failed to parse has no `access` to judge by: only the daemon's managers see it.
        if access.manages(context.peer) { members.append(("failed_files", SiteWire.failedFiles(await keeper.failedSiteFiles()))) }
        if let fleet = await keeper.fleetState() { members.append(("store", SiteWire.store(fleet))) }
        return WireBody.json(.object(members))
    }

    private func site(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        let snapshot = try await visibleSite(context)
        _ = try RouteQuery(request, for: .site)
        return WireBody.json(SiteWire.detail(snapshot, now: now(), listenError: listeners?.problem(of: snapshot.site.name)))
    }

    /// A session fit to serve, from the Keeper's board, to a peer whose access is known without a lookup of
    /// groups: answered on the event loop. Nil for anything else.
    private func cookiesNow(_ request: ServerRequest, _ context: APIContext) throws(APIError) -> ServerResponse? {
        guard let parameters = try? RouteQuery(request, for: .cookies),
              let served = keeper.servedNow(context.name, minValid: parameters.minValid), access.hasResolvedGroups(of: served.site)
        else { return nil }
        guard access.allows(context.peer, site: served.site) else { throw APIError.unknownSite(served.site.name) }
        return CookieAnswer(served, format: parameters.format ?? .header, url: parameters.url, now: now).response
    }

    private func cookies(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        let name = context.name
        let query = Result { () throws(APIError) in try RouteQuery(request, for: .cookies) }
        // A session fit to serve comes from the Keeper's board, without an actor hop.
        if case .success(let parameters) = query, let served = keeper.servedNow(name, minValid: parameters.minValid) {
            try await requireAccess(context, to: served.site)
            return CookieAnswer(served, format: parameters.format ?? .header, url: parameters.url, now: now).response
        }
        // Anything else as the Keeper sees it: the site (404), then the parameters (400), then a login to
        // start or wait for, or the reason there is no session.
        _ = try await visibleSite(context)
        let parameters = try query.get()
        let served: ServedSession
        do {
            served = try await keeper.session(
                for: name, minValid: parameters.minValid, wait: parameters.wait, byManager: access.manages(context.peer))
        } catch {
            throw APIError(error)
        }
        return CookieAnswer(served, format: parameters.format ?? .header, url: parameters.url, now: now).response
    }

    private func refresh(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        let snapshot = try await visibleSite(context)
        let byManager = access.manages(context.peer)
        if snapshot.status.phase == .needsAttention {
            try requireManager(context, to: "clear needs-attention of site '\(snapshot.site.name)' (a reader's refresh never does)")
        }
        let wait = try RouteQuery(request, for: .refresh).wait
        let status: Keeper.SiteStatus
        do {
            status = try await keeper.refresh(snapshot.site.name, wait: wait, byManager: byManager)
        } catch {
            throw APIError(error)
        }
        guard wait != nil else { return WireBody.json(.object([("status", .string("started"))]), status: .accepted) }
        return WireBody.json(SiteWire.refreshed(status, sessionServed: keeper.servedNow(status.name, minValid: nil) != nil))
    }

    private func report(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        let snapshot = try await visibleSite(context)
        let status = try RouteQuery(request, for: .report).status
        let answer: Keeper.ReportAnswer
        do {
            answer = try await keeper.report(snapshot.site.name)
        } catch {
            throw APIError(error)
        }
        logger.info("client reported a failed session", metadata: [
            "site": "\(snapshot.site.name)", "status": "\(status.map(String.init) ?? "-")", "pid": "\(context.peer.pid)",
            "action": "\(answer == .checking ? "check" : "ignored: one report per \(DurationText.format(Keeper.reportInterval))")",
        ])
        return WireBody.json(.object([("status", .string(answer == .checking ? "checking" : "ignored"))]), status: .accepted)
    }

    private func setCookie(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        let snapshot = try await visibleSite(context)
        try requireManager(context, to: "set cookies of site '\(snapshot.site.name)' (they change what every reader is served)")
        guard let url = try RouteQuery(request, for: .setCookie).url else { throw APIError.badParameter("url", "required: the URL of the response that carried the values") }
        let values = Self.setCookieValues(try await bodyText(request))
        let counts: (accepted: Int, rejected: Int)
        do {
            counts = try await keeper.setCookies(snapshot.site.name, url: url, values: values)
        } catch {
            throw APIError(error)
        }
        return WireBody.json(.object([
            ("accepted", .number(String(counts.accepted))), ("rejected", .number(String(counts.rejected))),
        ]))
    }

    private func events(_ request: ServerRequest, _ context: APIContext) throws(APIError) -> ServerResponse {
        _ = try RouteQuery(request, for: .events)
        let channel = context.channel
        let stream = try hub.subscribe(context.peer, close: { channel.close(promise: nil) })
        return ServerResponse(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: .stream { writer in
                // A comment first, so a reader knows it is subscribed before any event comes.
                try await writer.write(ByteBuffer(string: ": subscribed\n\n"))
                for await text in stream { try await writer.write(ByteBuffer(string: text)) }
            })
    }

    private func reload(_ request: ServerRequest, _ context: APIContext) throws(APIError) -> ServerResponse {
        try requireManager(context, to: "reload the configuration")
        _ = try RouteQuery(request, for: .reload)
        reload()
        return WireBody.json(.object([("status", .string("reloading"))]), status: .accepted)
    }

    private func metricsText(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        guard let metrics else { throw APIError(.notFound, .notFound, "metrics are off (metrics: false in config.yaml)") }
        try requireManager(context, to: "read the metrics (they name every site)")
        _ = try RouteQuery(request, for: .metrics)
        let text = metrics.render(await keeper.status(), fleet: await keeper.fleetState(), now: now())
        return WireBody.text(text, contentType: "text/plain; version=0.0.4; charset=utf-8")
    }

    /// `ANY /v1/sites/NAME/proxy/PATH`: the request goes to the site with its session (SPEC section 10). The
    /// query is the site's, not the route's.
    private func proxy(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        guard let egress else { throw APIError(.notFound, .notFound, "this server sends no requests to sites") }
        let name = context.name
        // The site's definition from the Keeper's board when it is there, without an actor hop.
        let site: SiteDefinition
        if let entry = keeper.board.entry(of: name) {
            try await requireAccess(context, to: entry.site)
            site = entry.site
        } else {
            site = try await visibleSite(context).site
        }
        let prefix = SocketRoute.proxy.target(site: name)
        let target = EgressTarget.rest(of: request, after: prefix)
        return try await egress.forward(EgressForwarder.ClientRequest(
            site: site, method: request.method.rawValue, target: target, prefix: prefix, headers: request.headers,
            body: request.body, peer: context.peer, byManager: access.manages(context.peer)))
    }

    // MARK: Helpers

    /// The request's body as text, at most ``SocketServer/Limits/maxBodyBytes`` (413 beyond).
    func bodyText(_ request: ServerRequest) async throws(APIError) -> String {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limits.maxBodyBytes)
        } catch let error as BodyTooLarge {
            throw APIError(.contentTooLarge, .tooLarge, error.description)
        } catch {
            throw APIError(.badRequest, .badRequest, "the request body could not be read: \(error)")
        }
        return String(decoding: body.readableBytesView, as: UTF8.self)
    }

    /// The site named in the path, when it exists and the peer may read it; else the 404 of a missing site.
    func visibleSite(_ context: APIContext) async throws(APIError) -> SiteSnapshot {
        let name = context.name
        guard let snapshot = await keeper.snapshot(of: name) else { throw APIError.unknownSite(name) }
        try await requireAccess(context, to: snapshot.site)
        return snapshot
    }

    /// Unless the peer may read `site`, the 404 of a missing site: a peer learns nothing of a site it may not
    /// read, not even that it exists.
    func requireAccess(_ context: APIContext, to site: SiteDefinition) async throws(APIError) {
        if !access.hasResolvedGroups(of: site) { await access.resolveMissingGroups(of: [site]) }
        guard access.allows(context.peer, site: site) else { throw APIError.unknownSite(site.name) }
    }

    /// 403 unless the peer is a manager (``AccessControl/manages(_:)``): what changes what others are served
    /// or concerns every site. A site route checks ``visibleSite(_:)`` first, so a peer that may not read the
    /// site gets its 404, not this.
    func requireManager(_ context: APIContext, to action: String) throws(APIError) {
        guard access.manages(context.peer) else { throw APIError.managerNeeded(uid: context.peer.uid, to: action) }
    }

    /// The Set-Cookie values of a body: one a line, blank lines skipped, a `Set-Cookie:` field name allowed
    /// before a value (as a header dump has it).
    static func setCookieValues(_ body: String) -> [String] {
        body.split(whereSeparator: \.isNewline).compactMap { line in
            var value = Substring(line)
            if value.lowercased().hasPrefix("set-cookie:") { value = value.dropFirst("set-cookie:".count) }
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? nil : trimmed
        }
    }
}
