import CurlTransport
import Daemon
import Foundation
import Locking
import Logging
import Notify
import Platform
import Scheduler
import ServiceLifecycle
import Sessions
import SiteConfig
import SocketAPI
import UnixSignals
import Vault

/// The daemon put together (SPEC section 7): what `sessionkeeper run` runs once it has read its options, and what
/// a test runs in its own process. ``run()`` locks the state folder, opens the store (the vault, or in fleet mode
/// the fleet's database with its ``FleetService``), starts the login path, the ``Keeper`` and its
/// ``KeeperService`` (with the store's change feed), the socket and its egress listeners, the notifiers of
/// `notify:` and the metrics, and runs them in one `ServiceGroup` until a graceful-shutdown signal or ``stop()``.
public final class DaemonAssembly: Sendable {
    private let configPath: String
    private let config: DaemonConfig
    private let loader: ConfigurationLoader
    private let environment: [String: String]
    private let keyEnvironment: [String: String]
    private let logger: Logger
    private let signals: [UnixSignal]
    private let onListening: @Sendable () -> Void
    /// The running group, for ``stop()``; `stopRequested` when ``stop()`` came before the group existed.
    private let running = Locked<(group: ServiceGroup?, stopRequested: Bool)>((nil, false))

    /// - Parameters:
    ///   - configPath: where `config` was read from (reloads read it again).
    ///   - config: config.yaml, loaded.
    ///   - loader: what reloads read config.yaml and the sites with; its environment must not hold a passphrase.
    ///   - environment: the process's environment without a passphrase variable: credentials' `{env: NAME}` and the
    ///     database URL's are looked up there.
    ///   - keyEnvironment: the environment the master key is read with (`vault.key: {passphrase_env: NAME}`'s value
    ///     is in it, taken out of the process's own environment by the caller).
    ///   - logger: the daemon's log.
    ///   - signals: the signals that stop the daemon gracefully (SIGTERM and SIGINT for `run`; none in a test,
    ///     which calls ``stop()``).
    ///   - onListening: called once the socket listens.
    public init(
        configPath: String, config: DaemonConfig, loader: ConfigurationLoader, environment: [String: String],
        keyEnvironment: [String: String], logger: Logger, signals: [UnixSignal] = [.sigterm, .sigint],
        onListening: @escaping @Sendable () -> Void = {}
    ) {
        self.configPath = configPath
        self.config = config
        self.loader = loader
        self.environment = environment
        self.keyEnvironment = keyEnvironment
        self.logger = logger
        self.signals = signals
        self.onListening = onListening
    }

    /// Runs the daemon until it is stopped; returns once every service has ended (the socket file removed, the
    /// state folder unlocked).
    /// - Throws: ``AssemblyError`` when a part cannot be set up (the daemon then never serves) or a service fails.
    public func run() async throws(AssemblyError) {
        // One daemon per state folder (SPEC section 6); the CLI's other commands share the vault freely.
        let daemonLock: StateFolderLock
        do {
            daemonLock = try StateFolderLock.acquire(stateDirectory: config.stateDirectory)
        } catch {
            throw .vault(error)
        }
        defer { daemonLock.release() }
        let logger = logger
        let wiring = try LoginWiring.open(
            config, environment: environment, keyEnvironment: keyEnvironment, logger: logger,
            credentialOutput: { site, credential, line in
                logger.info("credential command: \(line)", metadata: ["site": "\(site)", "credential": "\(credential)"])
            })
        defer { wiring.close() }
        let (keeper, fleet, storeChanges) = keeper(over: wiring)
        // Who reads and who manages which site: kept up to date by the service as config.yaml and the sites are
        // reloaded, read by the socket on every request.
        let access = AccessControl(daemonUID: Syscall.userID, allowUIDs: config.socket.allowUIDs)
        let service = KeeperService(
            configPath: configPath, config: config, loader: loader, keeper: keeper, notifier: ServiceNotifier(),
            logger: logger, storeChanges: storeChanges,
            willApply: { config, sites in
                await fleet?.waitUntilOpen()
                access.apply(allowUIDs: config.socket.allowUIDs)
                await access.resolveGroups(of: sites)
            })
        // The socket is the last service: on shutdown it stops first, so no client is answered by a keeper that
        // has stopped.
        let socket = SocketServer(
            settings: config.socket, metricsEnabled: config.metrics, keeper: keeper,
            reload: { service.reload() }, logger: logger, onListening: onListening, access: access, egressClient: wiring.client)
        do throws(SocketFileError) {
            try socket.prepareSocketFile()
        } catch {
            throw .socketFile(error)
        }
        // The notifiers come first: on shutdown they stop last, so what the keeper told them as it stopped still
        // goes out.
        var services = [ServiceGroupConfiguration.ServiceConfiguration]()
        if let notify = await notifyService(keeper: keeper, client: wiring.client, socket: socket) {
            services.append(.init(service: notify))
        }
        // Fleet mode: the database's service runs before the keeper's, which loads its sites once it is open.
        if let fleet { services.append(.init(service: fleet)) }
        services += [.init(service: service), .init(service: socket)]
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: signals, logger: logger))
        let stopAtOnce = running.withLock { state in
            state.group = group
            return state.stopRequested
        }
        if stopAtOnce { await group.triggerGracefulShutdown() }
        do {
            try await group.run()
        } catch {
            throw .stopped(error)
        }
    }

    /// Stops the daemon as SIGTERM does: the socket first (requests in flight finish, the socket file is
    /// removed), then the keeper, then the notifiers. Before ``run()`` has started its services, they stop as
    /// soon as they start.
    public func stop() async {
        let group = running.withLock { state in
            state.stopRequested = true
            return state.group
        }
        await group?.triggerGracefulShutdown()
    }

    /// The keeper over the store: its site gate (every site, or in fleet mode only under the lease), the store's
    /// change feed, and in fleet mode the lease service that drives the gate.
    private func keeper(over wiring: LoginWiring) -> (Keeper, FleetService?, (any StoreChangeFeed)?) {
        let keeper = Keeper(login: wiring.login, settings: config.scheduler, logger: logger, siteGate: wiring.store.siteGate)
        return (keeper, wiring.store.leaseService(for: keeper, logger: logger), wiring.store.changeFeed(logger: logger))
    }

    /// The notifiers of config.yaml's `notify:` (SPEC section 12), fed the state changes the keeper publishes
    /// (with their reasons and prompts), each delivery's outcome counted by the socket's metrics; nil when there
    /// are none. A notifier that cannot be set up is left out with an error in the log; the daemon serves
    /// everything else.
    private func notifyService(keeper: Keeper, client: CurlHTTPClient, socket: SocketServer) async -> NotifyService? {
        guard !config.notify.isEmpty else { return nil }
        let (notifiers, problems) = NotifyService.channels(for: config.notify, client: client, environment: environment)
        for problem in problems {
            logger.error("notifier left out", metadata: ["notifier": "\(problem.label)", "reason": "\(problem.message)"])
        }
        guard !notifiers.isEmpty else { return nil }
        let changes = await keeper.events(buffer: Self.notifyEventBuffer).compactMap { @Sendable event -> SiteStateChange? in
            if case .state(let change) = event { change } else { nil }
        }
        // A notification's answer command names the config unless `sessionkeeper answer` finds it from anywhere.
        let answerConfig = configPath == loader.userConfigPath ? nil : configPath
        return NotifyService(
            notifiers: notifiers, changes: changes, logger: logger,
            observe: { [socket] outcome in
                socket.notificationEnded(notifier: outcome.notifier, event: outcome.event, outcome: outcome.result.rawValue)
            },
            answerConfig: answerConfig)
    }

    /// The notifiers' subscription to the keeper's events reads each at once (it only queues notifications), so
    /// this is room for a burst of state changes of many sites at start.
    static let notifyEventBuffer = 4096
}
