import Daemon
import Hummingbird
import HummingbirdCore
import Locking
import Logging
import NIOCore
import NIOPosix
import Platform
import ServiceLifecycle
import SiteConfig

/// The loopback listeners of `egress.listen` (SPEC section 10): for each site that names one, the egress route
/// as a plain-HTTP reverse proxy on that loopback address, where `http://127.0.0.1:8481/PATH` goes to
/// `base_url/PATH`.
///
/// A TCP connection carries no credentials: the peer's user is asked of the kernel when the connection comes
/// (``ConnectionAdmission``, which counts it against the same caps as the socket's connections), its process
/// and groups at its first request, off the event loop (``LoopbackPeer/lookup(local:remote:findingProcess:)``
/// scans `/proc`), and the site's access rules judge it as on the socket; a peer that may not read the site, or
/// that cannot be found, gets the 404 of a site that does not exist. Its connections have the socket's request
/// deadline (for a request's head: every path's body streams on to the site) and idle timeout. The listeners
/// follow the Keeper's sites: one starts for a site added with `listen`, moves when the address changes, and
/// stops when the site goes or drops it. An address that cannot be bound is an error in the log for that site;
/// the daemon serves everything else.
final class EgressListeners: Sendable {
    private struct Running: Sendable {
        var address: LoopbackListenAddress
        var group: ServiceGroup
        var task: Task<Void, Never>
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
            start(name, address: address)
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
        guard let listener = running.withLock({ $0.removeValue(forKey: name) }) else { return }
        await listener.group.triggerGracefulShutdown()
        await listener.task.value
        logger.info("egress listener stopped", metadata: ["site": "\(name)", "address": "\(listener.address)"])
    }

    private func start(_ name: String, address: LoopbackListenAddress) {
        let application = Application(
            router: router(for: name),
            server: .socketHTTP1(admission: admission, everyBodyStreams: true),
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: Int(address.port)), serverName: nil),
            onServerRunning: { [logger, problems] _ in
                problems.withLock { $0[name] = nil }
                logger.info("egress listener listening", metadata: ["site": "\(name)", "address": "\(address)"])
            },
            eventLoopGroupProvider: .shared(eventLoop),
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [application], logger: logger))
        let task = Task { [logger, problems] in
            do {
                try await group.run()
            } catch {
                problems.withLock { $0[name] = "cannot listen on \(address): \(error)" }
                logger.error("egress listener failed; the site is served on the socket only", metadata: [
                    "site": "\(name)", "address": "\(address)", "file": "\(address.mark.map { "\($0)" } ?? "-")", "error": "\(error)",
                ])
            }
        }
        running.withLock { $0[name] = Running(address: address, group: group, task: task) }
    }

    /// Every path and method of the listener goes to the site named `name`.
    private func router(for name: String) -> Router<ListenerContext> {
        let router = Router(context: ListenerContext.self)
        for method in APIRoute.proxy.methods {
            for pattern in ["/", "/**"] {
                router.on(RouterPath(pattern), method: method) { request, context in
                    try await self.forward(request, context: context, site: name)
                }
            }
        }
        return router
    }

    private func forward(_ request: Request, context: ListenerContext, site name: String) async throws -> Response {
        let hidden = APIError.unknownSite(name)
        guard let entry = keeper.board.entry(of: name), let peer = await peer(of: context.channel) else { throw hidden }
        // Group names the site's `access` lists are turned into gids off the event loop, once.
        if !access.hasResolvedGroups(of: entry.site) { await access.resolveMissingGroups(of: [entry.site]) }
        guard access.allows(peer, site: entry.site) else { throw hidden }
        let target = EgressTarget.rest(of: request.uri, after: "")
        return try await forwarder.forward(EgressForwarder.ClientRequest(
            site: entry.site, method: request.method.rawValue, target: target, prefix: "", headers: request.headers,
            body: request.body, peer: peer))
    }

    /// The peer of `channel`, asked of the kernel once per connection; nil when it cannot be found. Its process
    /// is looked for on NIO's blocking pool: a scan of `/proc` takes as long as the machine has processes and
    /// descriptors, and the connection's task runs on the event loop that serves every connection.
    private func peer(of channel: any Channel) async -> PeerCredentials? {
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
            logger.warning("egress listener: the peer's user is unknown", metadata: ["remote": "\(remote)", "error": "\(error)"])
            return nil
        }
        // The primary group is not in socket diagnostics: a site's `access.groups` counts the process's groups.
        let peer = PeerCredentials(pid: found.pid ?? 0, uid: found.uid, gid: .max, supplementaryGroups: groups)
        peers.withLock { $0[key] = peer }
        channel.closeFuture.whenComplete { [peers] _ in _ = peers.withLock { $0.removeValue(forKey: key) } }
        return peer
    }
}

/// A listener request's context: Hummingbird's core and the connection, whose peer is found by its addresses.
struct ListenerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}
