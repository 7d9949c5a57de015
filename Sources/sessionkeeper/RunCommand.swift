import ArgumentParser
import PostgresStore
import Credentials
import CurlTransport
import Daemon
import Foundation
import Logging
import Notify
import Platform
import Scheduler
import ServiceLifecycle
import Sessions
import SiteConfig
import SocketAPI
import Vault

/// `sessionkeeper run [--config config.yaml]` (SPEC section 7): the daemon, in the foreground. Stops
/// cleanly on SIGTERM or SIGINT; SIGHUP reloads config.yaml and every site.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Keep every site logged in (the daemon, in the foreground).",
        discussion: """
            Loads config.yaml and every site of sites_dir, restores each site's session from the vault (a \
            valid one is kept, not logged in again), and keeps them logged in: before the essential cookies \
            expire, at least every refresh.max_age, and when a check says the session died. Site files \
            added, changed or removed take effect at once; a file that fails to parse keeps its last good \
            definition. SIGHUP reloads config.yaml and every site; SIGTERM and SIGINT stop cleanly. Under \
            systemd, Type=notify is supported through NOTIFY_SOCKET. Clients read the cookies over the \
            socket API at socket.path (curl --unix-socket PATH http://localhost/v1/sites). The notifiers of \
            config.yaml's notify: are told when a site needs attention and when it recovers (docs/PEOPLE.md).
            """
    )

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            try VaultAccess.protectProcess()
            let path = try config.locate(ConfigurationLoader())
            let daemonConfig = try config.load(ConfigurationLoader())
            // The passphrase variable leaves the environment before anything keeps a copy of it: the loader the
            // daemon keeps for reloads holds the environment without it.
            VaultAccess.takePassphrase(of: MasterKeySource(daemonConfig.vault.key))
            let loader = ConfigurationLoader()
            LogFormat.bootstrap(daemonConfig.log)
            let logger = Logger(label: "sessionkeeper")

            // One daemon per state folder (SPEC section 6); the CLI's other commands share the vault freely.
            let daemonLock: StateFolderLock
            do {
                daemonLock = try StateFolderLock.acquire(stateDirectory: daemonConfig.stateDirectory)
            } catch {
                throw CLIFailure(vaultError: error)
            }
            defer { daemonLock.release() }
            let wiring = try LoginWiring.open(daemonConfig, logger: logger, credentialOutput: { site, credential, line in
                logger.info("credential command: \(line)", metadata: ["site": "\(site)", "credential": "\(credential)"])
            })
            defer { wiring.close() }
            let login = wiring.login
            let storeChanges: (any StoreChangeFeed)?
            let keeper: Keeper
            // Fleet mode: the database's service runs before the keeper's, which loads its sites once it is open.
            let fleet: FleetService?
            switch wiring.store {
            case .vault(let vault):
                keeper = Keeper(login: login, settings: daemonConfig.scheduler, logger: logger)
                fleet = nil
                do {
                    storeChanges = try VaultChangeFeed(vault: vault)
                } catch {
                    storeChanges = nil
                    logger.error(
                        "cannot watch the vault; secrets set and sessions stored by other processes are seen at each site's next check",
                        metadata: ["error": "\(error)"])
                }
            case .fleet(let database):
                keeper = Keeper(login: login, settings: daemonConfig.scheduler, logger: logger, leasesGateRuns: true)
                fleet = FleetService(store: database, keeper: keeper, logger: logger)
                storeChanges = PostgresChangeFeed(store: database)
            }
            // Who reads and who manages which site: kept up to date by the service as config.yaml and the sites
            // are reloaded, read by the socket on every request.
            let access = AccessControl(daemonUID: Syscall.userID, allowUIDs: daemonConfig.socket.allowUIDs)
            let service = KeeperService(
                configPath: path, config: daemonConfig, loader: loader, keeper: keeper, notifier: ServiceNotifier(),
                logger: logger, storeChanges: storeChanges,
                willApply: { config, sites in
                    await fleet?.waitUntilOpen()
                    access.apply(allowUIDs: config.socket.allowUIDs)
                    await access.resolveGroups(of: sites)
                })
            // The socket is the last service: on shutdown it stops first, so no client is answered by a keeper
            // that has stopped.
            let socket = SocketServer(
                settings: daemonConfig.socket, metricsEnabled: daemonConfig.metrics, keeper: keeper,
                reload: { service.reload() }, logger: logger, access: access, egressClient: wiring.client)
            do throws(SocketFileError) {
                try socket.prepareSocketFile()
            } catch {
                throw CLIFailure.failed(error.description)
            }
            // The notifiers come first: on shutdown they stop last, so what the keeper told them as it stopped
            // still goes out.
            var services = [ServiceGroupConfiguration.ServiceConfiguration]()
            let notifications: @Sendable (NotificationOutcome) -> Void = { [socket] outcome in
                socket.notificationEnded(notifier: outcome.notifier, event: outcome.event, outcome: outcome.result.rawValue)
            }
            // A notification's answer command names the config unless `sessionkeeper answer` finds it from anywhere.
            let answerConfig = path == loader.userConfigPath ? nil : path
            if let notify = await Self.notifyService(
                daemonConfig, keeper: keeper, wiring: wiring, logger: logger, observe: notifications, answerConfig: answerConfig) {
                services.append(.init(service: notify))
            }
            if let fleet { services.append(.init(service: fleet)) }
            services += [.init(service: service), .init(service: socket)]
            let group = ServiceGroup(configuration: .init(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            do {
                try await group.run()
            } catch {
                throw CLIFailure.failed("the daemon stopped: \(error)")
            }
        }
    }

    /// The notifiers of config.yaml's `notify:` (SPEC section 12), fed the state changes the keeper publishes
    /// (with their reasons and prompts); nil when there are none. A notifier that cannot be set up is left
    /// out with an error in the log; the daemon serves everything else.
    static func notifyService(
        _ config: DaemonConfig, keeper: Keeper, wiring: LoginWiring, logger: Logger,
        observe: @escaping @Sendable (NotificationOutcome) -> Void, answerConfig: String?
    ) async -> NotifyService? {
        guard !config.notify.isEmpty else { return nil }
        let (notifiers, problems) = NotifyService.channels(
            for: config.notify, client: wiring.client, environment: ProcessInfo.processInfo.environment)
        for problem in problems {
            logger.error("notifier left out", metadata: ["notifier": "\(problem.label)", "reason": "\(problem.message)"])
        }
        guard !notifiers.isEmpty else { return nil }
        let changes = await keeper.events(buffer: notifyEventBuffer).compactMap { @Sendable event -> SiteStateChange? in
            if case .state(let change) = event { change } else { nil }
        }
        return NotifyService(notifiers: notifiers, changes: changes, logger: logger, observe: observe, answerConfig: answerConfig)
    }

    /// The notifiers' subscription to the keeper's events reads each at once (it only queues notifications),
    /// so this is room for a burst of state changes of many sites at start.
    static let notifyEventBuffer = 4096
}
