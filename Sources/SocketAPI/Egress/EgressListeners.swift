import Daemon
import Egress
import HTTPServer
import HTTPTypes
import Locking
import Logging
import NIOCore
import NIOPosix
import Platform
import SiteConfig
import SocketRoutes

/// The loopback listeners of `egress.listen` (SPEC section 10): for each site that names one, the egress route
/// as a plain-HTTP reverse proxy on that loopback address, where `http://127.0.0.1:8481/PATH` goes to
/// `base_url/PATH`.
///
/// It serves programs, not web pages: a request whose `Host` is not the listen address (or `localhost:PORT`), or
/// that carries a foreign `Origin` or a cross-site `Sec-Fetch-Site`, is refused with 403 before anything else
/// (``ListenerRequestRule``), so a page that rebinds its name to 127.0.0.1, or posts a form across sites, gets
/// nothing the daemon's session opens.
///
/// A TCP connection carries no credentials: the peer's user is asked of the kernel when the connection comes
/// (``ConnectionAdmission``, which counts it against the same caps as the socket's connections), and the site's
/// access rules judge that uid as on the socket; only when the site's `access.groups` could let in a uid its
/// other rules do not is the peer's process looked for (off the event loop: ``LoopbackPeer/lookup(local:remote:findingProcess:)``
/// scans `/proc`) for its groups. A peer that may not read the site, or that cannot be found, gets the 404 of a
/// site that does not exist. Its connections have the socket's request
/// deadline (for a request's head: every path's body streams on to the site) and idle timeout. The listeners
/// follow the Keeper's sites: one starts for a site added with `listen`, moves when the address changes, and
/// stops when the site goes or drops it. An address that cannot be bound is an error in the log for that site;
/// the daemon serves everything else.
final class EgressListeners: Sendable {
    private struct Running: Sendable {
        var address: LoopbackListenAddress
        /// Nil while it binds, and for an address that could not be bound.
        var server: HTTPServer?
    }

    private let keeper: Keeper
    private let access: AccessControl
    private let forwarder: EgressForwarder
    private let admission: ConnectionAdmission
    private let eventLoop: any EventLoopGroup
    private let logger: Logger
    private let running = Locked<[String: Running]>([:])
    /// Each open connection's peer, found at its first request.
    private let peers = Locked<[ObjectIdentifier: PeerCredentials]>([:])
    /// Why a site's listener could not be opened, by site.
    private let problems = Locked<[String: String]>([:])
    /// Requests refused as a web page's.
    private let refusals = LogThrottle()

    init(
        keeper: Keeper, access: AccessControl, forwarder: EgressForwarder, admission: ConnectionAdmission, eventLoop: any EventLoopGroup,
        logger: Logger
    ) {
        self.keeper = keeper
        self.access = access
        self.forwarder = forwarder
        self.admission = admission
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// Follows the Keeper's sites until its list ends (the Keeper stopped) or the task is cancelled, then stops
    /// every listener.
    func run() async {
        for await sites in await keeper.siteDefinitions() {
            if Task.isCancelled { break }
            await apply(sites)
        }
        await stopAll()
    }

    /// Starts, moves and stops listeners so that exactly the sites in `sites` with `egress.listen` have one.
    func apply(_ sites: [SiteDefinition]) async {
        let wanted = Dictionary(sites.compactMap { site in site.egress.listen.map { (site.name, $0) } }, uniquingKeysWith: { first, _ in first })
        let current = running.withLock { $0 }
        // Compared as the kernel binds them: a site file edited elsewhere keeps its listener.
        for (name, listener) in current where !(wanted[name].map(listener.address.clashes) ?? false) {
            await stop(name)
        }
        for (name, address) in wanted.sorted(by: { $0.key < $1.key }) where running.withLock({ $0[name] == nil }) {
            await start(name, address: address)
        }
    }

    /// Why the listener of `site` could not be opened; nil while it serves, or when the site has none.
    func problem(of site: String) -> String? {
        problems.withLock { $0[site] }
    }

    /// Stops every listener and waits for each to close.
    func stopAll() async {
        for name in running.withLock({ Array($0.keys) }) { await stop(name) }
    }

    private func stop(_ name: String) async {
        problems.withLock { $0[name] = nil }
        guard let listener = running.withLock({ $0.removeValue(forKey: name) }), let server = listener.server else { return }
        await server.shutdown()
        logger.info("egress listener stopped", metadata: ["site": "\(name)", "address": "\(listener.address)"])
    }

    private func start(_ name: String, address: LoopbackListenAddress) async {
        running.withLock { $0[name] = Running(address: address, server: nil) }
        let responder = ListenerResponder(listeners: self, site: name, rule: ListenerRequestRule(listen: address))
        do {
            let server = try await HTTPServer.start(
                address: .tcp(host: address.host, port: Int(address.port)), group: eventLoop, configuration: admission.serverConfiguration,
                gate: admission, responder: responder)
            problems.withLock { $0[name] = nil }
            running.withLock { $0[name]?.server = server }
            logger.info("egress listener listening", metadata: ["site": "\(name)", "address": "\(address)"])
        } catch {
            problems.withLock { $0[name] = "cannot listen on \(address): \(error)" }
            logger.error("egress listener failed; the site is served on the socket only", metadata: [
                "site": "\(name)", "address": "\(address)", "file": "\(address.mark.map { "\($0)" } ?? "-")", "error": "\(error)",
            ])
        }
    }

    /// Every path and method of a listener goes to its site; the route's methods only.
    private struct ListenerResponder: HTTPResponder {
        let listeners: EgressListeners
        let site: String
        let rule: ListenerRequestRule

        func bodyStreams(_ request: ServerRequest) -> Bool { true }

        func respond(to request: ServerRequest) -> ServerReply {
            guard SocketRoute.proxy.httpMethods.contains(request.method) else {
                let methods = SocketRoute.proxy.methods.joined(separator: ", ")
                var response = APIError(.methodNotAllowed, .methodNotAllowed, "this listener takes \(methods), not \(request.method.rawValue)")
                    .response()
                response.headers[.allow] = methods
                return .now(response)
            }
            // Judged before anything else, the peer's process included: a web page's request costs a lookup of fields.
            if let refusal = EgressListeners.refusal(of: request, rule: rule) {
                listeners.logRefusal(refusal, site: site, channel: request.channel)
                return .now(APIError(.forbidden, .forbidden, refusal).response())
            }
            return .later {
                do {
                    return try await listeners.forward(request, site: site)
                } catch let error as APIError {
                    return error.response()
                } catch {
                    listeners.logger.error("request failed", metadata: ["site": "\(site)", "error": "\(error)"])
                    return APIError(.internalServerError, .internal, "the daemon failed to answer; see its log").response()
                }
            }
        }
    }

    private func forward(_ request: ServerRequest, site name: String) async throws -> ServerResponse {
        let hidden = APIError.unknownSite(name)
        let channel = request.channel
        guard let entry = keeper.board.entry(of: name), let admitted = admission.peer(of: channel), admitted.uid != .max else {
            throw hidden
        }
        // The uid the kernel named at accept is judged first: a manager or a uid in `access.uids` is let in, and
        // a uid no rule can let in is refused, without a scan of /proc. Only `access.groups` needs the process
        // (its supplementary groups), so only then is it looked for.
        let peer: PeerCredentials
        if access.allows(admitted, site: entry.site) {
            peer = admitted
        } else {
            guard !entry.site.access.groups.isEmpty, let found = await peerWithGroups(of: channel, uid: admitted.uid) else { throw hidden }
            // Group names the site's `access` lists are turned into gids off the event loop, once.
            if !access.hasResolvedGroups(of: entry.site) { await access.resolveMissingGroups(of: [entry.site]) }
            guard access.allows(found, site: entry.site) else { throw hidden }
            peer = found
        }
        let target = EgressTarget.rest(of: request, after: "")
        return try await forwarder.forward(EgressForwarder.ClientRequest(
            site: entry.site, method: request.method.rawValue, target: target, prefix: "", headers: request.headers,
            body: request.body, peer: peer, byManager: access.manages(peer)))
    }

    /// Why `rule` refuses `request`; nil when it may be served. HTTPTypes holds the first `Host` field as the
    /// request's authority and leaves any further one among the fields.
    static func refusal(of request: ServerRequest, rule: ListenerRequestRule) -> String? {
        let fields = request.headers
        let hosts = (request.head.authority.map { [$0] } ?? []) + fields[values: Self.hostField]
        return rule.refusal(hostFields: hosts, originFields: fields[values: Self.originField], fetchSiteFields: fields[values: Self.fetchSiteField])
    }

    private static let hostField = HTTPField.Name("Host")!
    private static let originField = HTTPField.Name("Origin")!
    private static let fetchSiteField = HTTPField.Name("Sec-Fetch-Site")!

    /// A refused request is a warning with its peer (the uid admission read), at most one line per
    /// ``LogThrottle/interval``: a page can send them as fast as a browser allows.
    fileprivate func logRefusal(_ reason: String, site: String, channel: any Channel) {
        guard let count = refusals.count() else { return }
        let peer = admission.peer(of: channel)
        logger.warning("egress listener: a request refused (403)", metadata: [
            "site": "\(site)", "uid": "\(peer.map { "\($0.uid)" } ?? "-")",
            "remote": "\(channel.remoteAddress.flatMap(TCPEndpoint.init).map { "\($0)" } ?? "-")", "reason": "\(reason)",
            "refused": "\(count)",
        ])
    }

    /// The peer of `channel` with its process and that process's supplementary groups, for a site's
    /// `access.groups`: found once per connection, nil when it cannot be. The process is looked for on NIO's
    /// blocking pool: a scan of `/proc` takes as long as the machine has processes and descriptors, and the
    /// connection's task runs on the event loop that serves every connection. A socket held by a process of
    /// another uid than the one the kernel named at accept is not taken.
    private func peerWithGroups(of channel: any Channel, uid: UInt32) async -> PeerCredentials? {
        let key = ObjectIdentifier(channel)
        if let known = peers.withLock({ $0[key] }) { return known }
        guard let local = channel.localAddress.flatMap(TCPEndpoint.init), let remote = channel.remoteAddress.flatMap(TCPEndpoint.init) else {
            return nil
        }
        let lookUp = { @Sendable () throws -> (LoopbackPeer, [UInt32]) in
            let found = try LoopbackPeer.lookup(local: local, remote: remote)
            return (found, found.pid.map { UnixSocket.supplementaryGroups(pid: $0, uid: found.uid) } ?? [])
        }
        let found: LoopbackPeer
        let groups: [UInt32]
        do {
            (found, groups) = try await NIOThreadPool.singleton.runIfActive(lookUp)
        } catch {
            logger.warning("egress listener: the peer's process is unknown", metadata: ["remote": "\(remote)", "error": "\(error)"])
            return nil
        }
        guard found.uid == uid else { return nil }
        // The primary group is not in socket diagnostics: a site's `access.groups` counts the process's groups.
        let peer = PeerCredentials(pid: found.pid ?? 0, uid: found.uid, gid: .max, supplementaryGroups: groups)
        peers.withLock { $0[key] = peer }
        channel.closeFuture.whenComplete { [peers] _ in _ = peers.withLock { $0.removeValue(forKey: key) } }
        return peer
    }
}
