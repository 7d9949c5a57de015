import Foundation
import Locking
import Logging
import Platform
import Scheduler
import ServiceLifecycle
import Sessions
import SiteConfig
import UnixSignals

/// The daemon's long-lived part (SPEC section 7), a `Service` in the daemon's `ServiceGroup`: it loads the
/// sites into the ``Keeper``, follows `sites_dir` (a file added, changed or removed takes effect within
/// a fraction of a second) and the store (a secret set or a session stored by another process takes effect
/// at once), reloads `config.yaml` and every site on SIGHUP, tells systemd how it goes (`Type=notify`), and on
/// graceful shutdown cancels the runs in flight.
public final class KeeperService: Service, Sendable {
    /// Changes arriving this close together are applied as one (an editor writes, renames and chmods).
    public static let settleTime: Duration = .milliseconds(100)

    private let configPath: String
    private let initialConfig: DaemonConfig
    private let loader: ConfigurationLoader
    private let keeper: Keeper
    private let notifier: ServiceNotifier
    private let logger: Logger
    private let storeChanges: (any StoreChangeFeed)?
    private let inputs: AsyncStream<Input>
    private let feed: AsyncStream<Input>.Continuation
    private let pendingFiles = PendingFileNames()
    private let willApply: @Sendable (DaemonConfig, [SiteDefinition]) async -> Void

    /// - Parameters:
    ///   - storeChanges: what other processes change in the store; nil: their changes are seen at each site's
    ///     next check only.
    ///   - willApply: told config.yaml as it is now and every site before the keeper takes them (at start, on
    ///     every reload and every change of a site file), and awaited: the socket's access rules follow them
    ///     (`socket.allow_uids`, the gids of `access.groups`).
    public init(
        configPath: String, config: DaemonConfig, loader: ConfigurationLoader, keeper: Keeper,
        notifier: ServiceNotifier, logger: Logger, storeChanges: (any StoreChangeFeed)? = nil,
        willApply: @escaping @Sendable (DaemonConfig, [SiteDefinition]) async -> Void = { _, _ in }
    ) {
        self.willApply = willApply
        self.configPath = configPath
        self.initialConfig = config
        self.loader = loader
        self.keeper = keeper
        self.notifier = notifier
        self.logger = logger
        self.storeChanges = storeChanges
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        self.inputs = inputs
        self.feed = feed
    }

    /// Re-reads config.yaml and every site, as SIGHUP does (the socket's `POST /v1/reload`).
    public func reload() {
        feed.yield(.reload)
    }

    private enum Input: Sendable {
        /// Site files changed; their names wait in `pendingFiles`.
        case files
        case reload
        case watchdog
        case statusChanged
    }

    /// At most one `STATUS=` update to systemd per this interval; the last change within it is sent at its end.
    public static let statusInterval: Duration = .seconds(1)

    public func run() async throws {
        var config = initialConfig
        var catalog = SiteCatalog()
        log(catalog.reloadAll(loader: loader, config: config))
        await apply(catalog, config: config)

        var watcher = startWatching(config.sitesDirectory, feed: feed)
        let clockWatcher = startWatchingTheClock()
        // Unstructured, like the three below: each runs for the service's life beside the input loop, which must
        // not wait on it, and is cancelled when the loop ends (the `defer` below).
        let storeWatch = Task { [storeChanges, keeper] in
            guard let storeChanges else { return }
            for await batch in storeChanges.changes { await keeper.storeChanged(batch) }
        }
        let signals = Task {
            for await _ in await UnixSignalsSequence(trapping: .sighup) { self.reload() }
        }
        let watchdog = Task { [notifier, feed] in
            guard let interval = notifier.watchdogInterval else { return }
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                feed.yield(.watchdog)
            }
        }
        // Under systemd, `systemctl status` shows the counts as they change, not only as they were at start.
        let statusUpdates = Task { [notifier, keeper, feed] in
            guard notifier.socketPath != nil else { return }
            var lastSent = ContinuousClock.now - Self.statusInterval
            // A small buffer is enough: the counts are read when the update is sent, so a change whose event
            // was dropped while the buffer was full is still counted.
            for await event in await keeper.events(buffer: 16) {
                guard case .state = event else { continue }
                let wait = lastSent + Self.statusInterval - .now
                if wait > .zero { try? await Task.sleep(for: wait) }
                lastSent = .now
                feed.yield(.statusChanged)
            }
        }
        defer {
            signals.cancel()
            storeWatch.cancel()
            watchdog.cancel()
            statusUpdates.cancel()
        }
        await notify { try $0.ready(status: await self.statusLine()) }
        logger.info("daemon ready", metadata: ["sites": "\(catalog.sites.count)", "sites_dir": "\(config.sitesDirectory)"])

        for await input in inputs.cancelOnGracefulShutdown() {
            switch input {
            case .files:
                // Let the rest of an editor's burst arrive first; what comes later is another batch.
                try? await Task.sleep(for: Self.settleTime)
                let names = pendingFiles.takeAll()
                guard !names.isEmpty else { continue }
                log(catalog.reload(names: names, loader: loader, config: config))
                await apply(catalog, config: config)
                continue
            case .reload:
                await notify { try $0.reloading() }
                do {
                    let reloaded = try loader.loadConfig(at: configPath)
                    if reloaded.sitesDirectory != config.sitesDirectory {
                        watcher?.stop()
                        watcher = startWatching(reloaded.sitesDirectory, feed: feed)
                    }
                    let pending = Self.settingsNeedingRestart(running: config, reloaded: reloaded)
                    config = reloaded
                    logger.info("config.yaml reloaded", metadata: ["file": "\(configPath)"])
                    if !pending.isEmpty {
                        logger.warning(
                            "config.yaml: \(pending.joined(separator: ", ")) changed; the daemon keeps the running values until it is restarted")
                    }
                } catch {
                    // The previous settings stay, as a broken site file keeps its last good definition.
                    for line in DiagnosticRenderer(showSource: false).render(error, source: nil) {
                        logger.error("config.yaml not reloaded: \(line)")
                    }
                }
                log(catalog.reloadAll(loader: loader, config: config))
                await apply(catalog, config: config)
                await notify { try $0.ready(status: await self.statusLine()) }
                continue
            case .watchdog:
                await notify { try $0.watchdog() }
                continue
            case .statusChanged:
                let line = await statusLine()
                await notify { try $0.status(line) }
                continue
            }
        }
        await notify { try $0.stopping() }
        watcher?.stop()
        clockWatcher?.stop()
        storeChanges?.stop()
        await keeper.stopAll()
        logger.info("daemon stopped")
    }

    /// Makes the keeper's sites the catalog's, and has the store's changes followed for them.
    private func apply(_ catalog: SiteCatalog, config: DaemonConfig) async {
        let sites = catalog.sites
        await willApply(config, sites)
        let settings = config.scheduler
        storeChanges?.follow(
            sites: Set(sites.map(\.name)), secrets: sites.reduce(into: Set<String>()) { $0.formUnion(Keeper.secretNames(of: $1)) })
        await keeper.apply(sites, settings: settings)
        await keeper.siteFilesFailed(SiteFileFailure.all(in: catalog))
    }

    /// Follows `folder`; its changes wait in `pendingFiles`, announced by one `.files` input per batch. A folder
    /// that cannot be watched is logged (the sites loaded at start keep running; SIGHUP tries again).
    private func startWatching(_ folder: String, feed: AsyncStream<Input>.Continuation) -> DirectoryWatcher? {
        do {
            let watcher = try DirectoryWatcher(folder: folder)
            // Unstructured: it lives as long as the watcher, whose stream ends when the watcher is dropped.
            Task { [pendingFiles] in
                for await names in watcher.changes where pendingFiles.add(names) { feed.yield(.files) }
            }
            return watcher
        } catch {
            logger.error("cannot watch the sites folder; changes apply on SIGHUP only", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Follows the kernel's reports that the wall clock was set, so that a set clock is noticed at once rather
    /// than at the keeper's next timer, which for a site without a check may be hours away. Without them (a
    /// kernel or sandbox with no timerfd) a jump is still noticed at the next wake, as the log line says.
    private func startWatchingTheClock() -> WallClockWatcher? {
        do {
            let watcher = try WallClockWatcher()
            // Unstructured: it lives as long as the watcher, whose stream ends when the watcher is dropped.
            Task { [keeper] in
                for await _ in watcher.changes { await keeper.wallClockWasSet() }
            }
            return watcher
        } catch {
            logger.warning(
                "the kernel does not report changes of the wall clock; a change is noticed at the next login, check or keepalive",
                metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func log(_ report: SiteCatalog.Report) {
        for failure in report.failures {
            for line in DiagnosticRenderer(showSource: false).render(failure, source: nil) {
                logger.error("site file not loaded, keeping its last good definition: \(line)")
            }
        }
        for file in report.removed { logger.info("site file removed", metadata: ["file": "\(file)"]) }
        for file in report.recovered { logger.info("site file loaded again: its errors are fixed", metadata: ["file": "\(file)"]) }
    }

    /// The keys of config.yaml a reload cannot apply to a running daemon: the state folder and the vault it
    /// holds open, the store (`store:`, a fleet's database), the socket it listens on (its path, mode and group), the metrics route, the logging and the
    /// notifiers set up at start. Sites, `sites_dir`, `plugins_dir`, `defaults`, `scheduler` and
    /// `socket.allow_uids` apply at once.
    static func settingsNeedingRestart(running: DaemonConfig, reloaded: DaemonConfig) -> [String] {
        var keys: [String] = []
        if running.stateDirectory != reloaded.stateDirectory { keys.append("state_dir") }
        if running.vault != reloaded.vault { keys.append("vault") }
        if running.store != reloaded.store { keys.append("store") }
        var socket = running.socket
        socket.allowUIDs = reloaded.socket.allowUIDs
        if socket != reloaded.socket { keys.append("socket") }
        if running.metrics != reloaded.metrics { keys.append("metrics") }
        if running.log != reloaded.log { keys.append("log") }
        if running.notify != reloaded.notify { keys.append("notify") }
        return keys
    }

    /// `N sites: V valid, F failing, O other` (failing: failed or needs-attention; other: logging in for
    /// the first time, or disabled).
    private func statusLine() async -> String {
        let sites = await keeper.status()
        let valid = sites.filter { $0.phase == .valid || $0.phase == .refreshing }.count
        let failing = sites.filter { $0.phase == .failed || $0.phase == .needsAttention }.count
        return "\(sites.count) sites: \(valid) valid, \(failing) failing, \(sites.count - valid - failing) other"
    }

    /// systemd is told, and a failure to tell it is logged, never fatal.
    private func notify(_ body: (ServiceNotifier) async throws -> Void) async {
        do {
            try await body(notifier)
        } catch {
            logger.warning("cannot notify systemd", metadata: ["error": "\(error)"])
        }
    }
}

/// Names of changed site files waiting to be read. The watcher reports a burst (a hundred files copied in at
/// once) in many small parts; they join one batch, read once after ``KeeperService/settleTime``, instead of
/// one batch per part, each waiting out the settle time behind the one before (a hundred parts made the last
/// file wait ten seconds and more, where SPEC section 7 promises two).
final class PendingFileNames: Sendable {
    private let names = Locked<[String]>([])

    /// Adds changed names; true when none were waiting, so this starts a batch and a read must be asked for.
    func add(_ more: [String]) -> Bool {
        names.withLock { names in
            let startsBatch = names.isEmpty && !more.isEmpty
            names += more
            return startsBatch
        }
    }

    /// Every waiting name, leaving none: names added later start the next batch.
    func takeAll() -> [String] {
        names.withLock { names in
            defer { names = [] }
            return names
        }
    }
}
