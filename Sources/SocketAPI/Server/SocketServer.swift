import Daemon
import Foundation
import HTTPServer
import HTTPTransport
import Locking
import Logging
import NIOCore
import NIOPosix
import Platform
import ServiceLifecycle
import SiteConfig

/// The daemon's HTTP/1.1 API on its Unix-domain socket (SPEC section 8), a `Service` in the daemon's
/// `ServiceGroup` beside the ``KeeperService``.
///
/// It owns the socket file (its folder, a stale file from a crash replaced, a live one refused, the mode and
/// group applied once bound, the file removed when it stops), the peer check of every connection
/// (SO_PEERCRED, ``AccessControl``), the caps on connections and requests (``Limits``), the routes, the event
/// stream and the metrics. Everything about sites
/// and sessions it asks the ``Keeper``.
public final class SocketServer: Service, Sendable {
    /// Bounds on what one client may make the server hold. NIO serves every connection on its event loops
    /// without blocking, so a slow client holds its own connection only, and these caps bound how many it may
    /// hold and for how long; the defaults are far above what a deployment's clients use, so only a runaway or
    /// hostile peer meets them.
    public struct Limits: Sendable, Hashable {
        /// Connections open at once, all peers together; the next is answered 503 and closed.
        public var maxConnections: Int
        /// Connections open at once from one uid, so one peer cannot take every place of ``maxConnections``.
        public var maxConnectionsPerUID: Int
        /// A request's head and body must arrive within this of its first byte, else 408 and the connection is
        /// closed: a trickled request holds a connection this long at most. The time a route then takes
        /// (`wait=`, an event stream) does not count.
        public var requestDeadline: Duration
        /// `GET /v1/events` streams open at once, all peers together; the next is answered 503.
        public var maxEventReaders: Int
        /// `GET /v1/events` streams open at once from one uid.
        public var maxEventReadersPerUID: Int
        /// Largest request body (`set-cookie`'s values); a larger one is a 413.
        public var maxBodyBytes = 64 * 1024
        /// Largest single header field, and all header fields together.
        public var maxHeaderFieldBytes = 8 * 1024
        public var maxHeaderListBytes = 16 * 1024
        /// Most header fields in one request.
        public var maxHeaderFieldCount = 64
        /// A connection with no request in progress for this long is closed (a request's head arriving
        /// byte by byte counts as no request).
        public var idleTimeout: Duration
        /// Events held for one `GET /v1/events` reader; one that falls further behind is dropped.
        public var eventBuffer = 256
        /// Request bodies the egress route keeps to send again after a login, all connections together
        /// (``ReplayMemory``); past it a body streams without being kept.
        public var replayMemoryBytes: Int

        /// The caps config.yaml's `socket:` sets (its defaults when it sets none), and fixed bounds on requests.
        public init(_ configured: SocketLimits = SocketLimits()) {
            maxConnections = configured.maxConnections
            maxConnectionsPerUID = configured.maxConnectionsPerUID
            requestDeadline = configured.requestTimeout
            maxEventReaders = configured.maxEventReaders
            maxEventReadersPerUID = configured.maxEventReadersPerUID
            idleTimeout = configured.idleTimeout
            replayMemoryBytes = configured.replayMemoryBytes
        }
    }

    private let settings: SocketSettings
    private let limits: Limits
    private let keeper: Keeper
    private let access: AccessControl
    private let metrics: DaemonMetrics
    private let metricsEnabled: Bool
    private let reload: @Sendable () -> Void
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let peers = PeerRegistry()
    /// Counts and caps the connections of the socket and of the egress loopback listeners together.
    private let admission: ConnectionAdmission
    private let hub: EventHub
    private let onListening: @Sendable () -> Void
    /// The egress route's sender, and the loopback listeners of `egress.listen`; nil without an HTTP client.
    private let egress: EgressForwarder?
    private let listeners: EgressListeners?

    /// The one event-loop thread that serves the socket's connections, for the life of the process.
    ///
    /// One thread: a request costs microseconds on it (the cookies are read from the Keeper's board, logins run
    /// elsewhere), and with a second loop on the same core the two took turns by the scheduler's time slice
    /// (p99 at 16 connections about 4 ms instead of 1 ms, no gain in throughput). Several servers of one process
    /// (tests run many) share it, so it is never shut down.
    private static let eventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// - Parameters:
    ///   - settings: `socket:` of config.yaml (read once: a changed socket needs a restart).
    ///   - metricsEnabled: `metrics:` of config.yaml (serve `GET /metrics`).
    ///   - reload: what `POST /v1/reload` does (``KeeperService/reload()``, as SIGHUP).
    ///   - onListening: called once the socket listens with its mode and group set.
    ///   - access: who reads and who manages which site; the daemon passes the one its ``KeeperService`` keeps
    ///     up to date on reload (``AccessControl/apply(allowUIDs:)``, ``AccessControl/resolveGroups(of:)``).
    ///     Without one, `settings.allowUIDs` for the life of the server.
    ///   - egressClient: what the egress route (`/v1/sites/NAME/proxy/...`, SPEC section 10) sends requests with:
    ///     the client logins use; nil leaves the route out (404).
    public init(
        settings: SocketSettings, metricsEnabled: Bool, keeper: Keeper, reload: @escaping @Sendable () -> Void,
        logger: Logger, limits: Limits? = nil, now: @escaping @Sendable () -> Date = { Date() },
        onListening: @escaping @Sendable () -> Void = {}, access: AccessControl? = nil,
        egressClient: (any StreamingHTTPClient)? = nil
    ) {
        self.settings = settings
        let limits = limits ?? Limits(settings.limits)
        self.limits = limits
        self.keeper = keeper
        let control = access ?? AccessControl(daemonUID: Syscall.userID, allowUIDs: settings.allowUIDs)
        self.access = control
        self.metrics = DaemonMetrics()
        self.metricsEnabled = metricsEnabled
        self.reload = reload
        self.logger = logger
        self.now = now
        self.hub = EventHub(keeper: keeper, access: control, metrics: metrics, limits: limits, logger: logger)
        self.onListening = onListening
        let metrics = self.metrics
        let egress = egressClient.map {
            EgressForwarder(
                keeper: keeper, client: $0, metrics: metrics, logger: logger, now: now, replayMemory: ReplayMemory(limit: limits.replayMemoryBytes))
        }
        self.egress = egress
        let access = self.access
        let admission = ConnectionAdmission(limits: limits, peers: peers, logger: logger)
        self.admission = admission
        self.listeners = egress.map {
            EgressListeners(keeper: keeper, access: access, forwarder: $0, admission: admission, eventLoop: Self.eventLoop, logger: logger)
        }
    }

    /// Checks the socket path before anything else starts, so a daemon that cannot serve there stops before
    /// it logs anything in: creates a missing folder and replaces a stale socket file. ``run()`` checks again.
    /// - Throws: ``SocketFileError`` when another process listens on the path, or it holds something else.
    public func prepareSocketFile() throws(SocketFileError) {
        _ = try SocketFile.prepare(settings)
    }

    /// Listens until graceful shutdown, then lets requests in flight finish, ends the event streams and
    /// removes the socket file.
    /// - Throws: ``SocketFileError`` when the socket cannot be set up (another daemon listens on it, the path
    ///   holds something else, a system call failed), or the error that stopped the server.
    public func run() async throws {
        let gid = try SocketFile.prepare(settings)
        let responder = APIResponder(routes: APIRoutes(
            keeper: keeper, access: access, hub: hub, metrics: metricsEnabled ? metrics : nil, reload: reload, limits: limits,
            started: .now, logger: logger, now: now, egress: egress, listeners: listeners
        ), peers: peers, metrics: metrics, logger: logger)
        let server = try await HTTPServer.start(
            address: .unixDomainSocket(path: settings.path), group: Self.eventLoop, configuration: admission.serverConfiguration,
            gate: admission, responder: responder)
        defer { SocketFile.remove(settings.path) }
        do throws(SocketFileError) {
            try SocketFile.protect(settings, gid: gid)
        } catch {
            await server.shutdown()
            throw error
        }
        logger.info("socket listening", metadata: ["path": "\(settings.path)", "mode": "\(String(settings.mode, radix: 8))"])
        onListening()
        await withGracefulShutdownHandler {
            // The hub and the listeners run until the graceful shutdown (or the task's cancellation): each child
            // says whether its end is that.
            await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await self.hub.run()
                    return false
                }
                if let listeners = self.listeners {
                    // The loopback listeners of `egress.listen` live as long as the socket.
                    group.addTask {
                        await listeners.run()
                        return false
                    }
                }
                group.addTask {
                    try? await gracefulShutdown()
                    return true
                }
                while let stopping = await group.next() {
                    if stopping { group.cancelAll() }
                }
            }
        } onGracefulShutdown: {
            // Event streams never end by themselves: they end now, so their answers finish.
            self.hub.closeAll()
        }
        hub.closeAll()
        // No new connection; the requests in progress finish, then their connections close.
        await server.shutdown()
    }

    /// Counts a notification that ended, for `sessionkeeper_notifications_total{notifier,event,outcome}` (the
    /// daemon's notifiers report here).
    public func notificationEnded(notifier: String, event: String, outcome: String) {
        metrics.notificationEnded(notifier: notifier, event: event, outcome: outcome)
    }
}
