import CookieJar
import Foundation
import HTTPTransport
import LoginFlow
import Logging
import Scheduler
import Sessions
import SiteConfig

/// Keeps every site logged in (SPEC section 7): it feeds each site's ``SiteSchedule`` what happened,
/// runs the logins, checks and keepalives the schedules ask for through the one login path
/// (``SiteLogin``), lets ``LoginGate`` pace the logins, and sleeps until the next deadline. It never
/// polls: between deadlines and events it holds no timer but the one for the earliest deadline.
public actor Keeper {
    /// What `status` and the socket show of one site. Never a cookie value.
    public struct SiteStatus: Sendable, Hashable {
        public var name: String
        public var phase: SiteSchedule.Phase
        public var expiresAt: Date?
        public var lastLogin: Date?
        public var nextRefresh: Date?
        public var lastError: String?
        public var siteDown: Bool
        /// Why the site waits for a person and what to do; nil unless `phase` is needs-attention.
        public var attention: Attention?
        /// The next run planned (a login, check or keepalive), nil when none is.
        public var nextRun: SiteSchedule.PlannedRun?
        /// Consecutive failed attempts (``SiteSchedule/failures``); 0 when nothing is failing.
        public var failures: Int
        /// While failing, when the next attempt is planned.
        public var retryAt: Date?
        /// How the site's last login ended; nil when none ended since the daemon started.
        public var lastAttempt: LoginAttempt?
        /// The prompt a login waits on, while the site is waiting-for-person.
        public var prompt: PromptRequest? = nil
        /// Fleet mode: whether this keeper holds the site's lease (false: it follows the holder); nil outside.
        public var holdsLease: Bool? = nil
        /// What was learned of the site's idle timeout and lifetime (SPEC section 7); nil with `learn: false`.
        public var learned: LearnedLifetimes? = nil
    }

    struct Entry {
        var site: SiteDefinition
        var schedule: SiteSchedule
        var record: SessionRecord?
        /// Runs in flight for this site, cancelled when it is removed.
        var runs: [SiteSchedule.Action: Task<Void, Never>] = [:]
        /// How the last login ended.
        var lastAttempt: LoginAttempt?
        /// What the site's sessions taught so far (``Keeper+Learning``); nil with `learn: false`.
        var learner: LifetimeLearner?
    }

    let login: SiteLogin
    /// Who may run a site now (``SiteGate``): every site (``OpenSiteGate``), or in fleet mode (SPEC section 11)
    /// only those whose lease this keeper holds (``LeaseGate``); the others follow the sessions the holder stores.
    let siteGate: any SiteGate
    /// Sites the gate opened for whose stored session is being read before they are planned.
    var pendingLeaseReads: Set<String> = []
    /// When each site last acted on another keeper's client asking for a login (``loginRequested(_:refresh:)``).
    var lastRemoteAsk: [String: ContinuousClock.Instant] = [:]
    /// Each site's definition, session and schedule view, published on every change for the socket's
    /// readers, who need no actor hop for a session that is fit to serve (``servedNow(_:minValid:)``).
    public nonisolated let board = ServedBoard()
    var settings: SchedulerSettings
    let logger: Logger
    /// Every timer's clock: deadlines, the login gate's pacing, waits and run durations.
    let clock: any MonotonicClock
    let wallClock: @Sendable () -> Date
    var entries: [String: Entry] = [:]
    var gate: LoginGate
    var sleeper: Task<Void, Never>?
    var sleeperDeadline: ContinuousClock.Instant?
    var seed: UInt64 = 0x5E55_10E5
    /// How cautiously each site's learner explores (``setLearnerSettings(_:)``).
    var learnerSettings = LifetimeLearner.Settings()
    /// The writes of learned values in flight, by site: a login of the site waits for its end (``Keeper+Learning``).
    var learningWrites: [String: Task<Void, Never>] = [:]
    /// Set by ``stopAll()``: a run that ends after it (cancelled or not) starts nothing new and arms no timer.
    var stopped = false
    /// Each site's earliest deadline, kept beside `entries` so that arming the one timer and finding the
    /// sites due need no copy of every site's entry (with ten thousand sites, copying them on each event
    /// made starting quadratic).
    var deadlineBySite: [String: ContinuousClock.Instant] = [:]
    var subscribers: [UInt64: AsyncStream<KeeperEvent>.Continuation] = [:]
    /// Requests waiting for a site's login to end, by site; resumed with false when their wait runs out.
    var loginWaiters: [String: [UInt64: CheckedContinuation<Bool, Never>]] = [:]
    var lastReport: [String: ContinuousClock.Instant] = [:]
    var nextID: UInt64 = 0
    /// Both clocks when the keeper last woke: the next wake compares how far each moved.
    var clockReference: Now?
    /// Sites whose stored session changed while their own login ran (``lookAtStoredSession(of:)``).
    var storedDuringLogin: Set<String> = []
    /// Site files that failed to load, as the last reload left them (``failedSiteFiles()``).
    var failedFiles: [SiteFileFailure] = []
    /// The prompt each waiting login asks, by site (``ask(_:site:)``): at most one, as one login runs per site.
    var waitingPrompts: [String: WaitingPrompt] = [:]
    /// When each site last started a login for a logged-out answer to a proxied request (``sessionRejected(_:usedLogin:reason:wait:)``).
    var lastRejection: [String: ContinuousClock.Instant] = [:]
    /// Who follows the list of sites (``siteDefinitions()``).
    var siteListFollowers: [UInt64: AsyncStream<[SiteDefinition]>.Continuation] = [:]

    /// How far the wall clock may move apart from the monotonic clock between two wakes before the keeper takes
    /// it as a jump (the clock was set, or the machine slept) and plans every site again.
    public static let clockJumpTolerance: Duration = .seconds(2)

    /// A client's `report` is acted on at most once per this interval per site: a scraper that meets one dead
    /// session on many requests at once runs the check once, and cannot make the daemon hammer the site.
    public static let reportInterval: Duration = .seconds(10)

    /// - Parameters:
    ///   - login: the login path (client, store, credentials) every run goes through.
    ///   - clock: the monotonic clock every timer runs on.
    ///   - wallClock: the wall clock (cookie expiry); timers always use `clock`.
    ///   - siteGate: who may run a site now; in fleet mode a ``LeaseGate``, and `login`'s store the fleet's, read
    ///     unfenced, while each run writes through the store its lease fences.
    public init(
        login: SiteLogin, settings: SchedulerSettings, logger: Logger, clock: any MonotonicClock = ContinuousClock(),
        wallClock: @escaping @Sendable () -> Date = { Date() }, siteGate: any SiteGate = OpenSiteGate()
    ) {
        self.login = login
        self.siteGate = siteGate
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.wallClock = wallClock
        self.gate = LoginGate(maxConcurrent: settings.maxConcurrentLogins, perHostInterval: settings.perHostInterval)
    }

    var now: Now { Now(monotonic: clock.now, wall: wallClock()) }

    // MARK: Sites

    /// Makes the kept sites exactly `sites`: new ones start (restored from the store, logged in only when
    /// no valid session is stored), changed ones take their new definition, missing ones stop and their
    /// stored session is deleted. `settings` (the `scheduler:` of a reloaded config.yaml) apply from now on.
    public func apply(_ sites: [SiteDefinition], settings newSettings: SchedulerSettings? = nil) async {
        var settingsChanged = false
        if let newSettings, newSettings != settings {
            settings = newSettings
            gate.maxConcurrent = max(1, newSettings.maxConcurrentLogins)
            gate.perHostInterval = newSettings.perHostInterval
            settingsChanged = true
        }
        let wanted = Dictionary(sites.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for name in entries.keys where wanted[name] == nil {
            remove(name)
            // Sessions shared with other keepers (a fleet's) stay: one keeper's sites/ dropping a site does not delete it.
            guard siteGate.ownsStoredSessions else { continue }
            do {
                try await login.store.remove(site: name)
            } catch {
                logger.error("cannot delete the removed site's session", metadata: ["site": "\(name)", "error": "\(error)"])
            }
        }
        // Every site's policy carries the jitter: new settings reach each site.
        for site in sites where entries[site.name]?.site != site || settingsChanged {
            if entries[site.name] != nil {
                update(site)
            } else {
                await add(site)
            }
        }
        if clockReference == nil { clockReference = now }
        rearm()
        publishSiteList()
    }

    /// Every site's status, sorted by name.
    public func status() -> [SiteStatus] {
        let now = now
        return entries.values.map { status(of: $0, now: now) }.sorted { $0.name < $1.name }
    }

    /// Every site with its definition and session, sorted by name (what the socket filters by `access`).
    public func snapshots() -> [SiteSnapshot] {
        let now = now
        return entries.values.map { SiteSnapshot(status: status(of: $0, now: now), site: $0.site, record: $0.record) }
            .sorted { $0.status.name < $1.status.name }
    }

    /// One site's status, definition and session; nil when no such site is kept.
    public func snapshot(of name: String) -> SiteSnapshot? {
        entries[name].map { SiteSnapshot(status: status(of: $0, now: now), site: $0.site, record: $0.record) }
    }

    func status(of entry: Entry, now: Now) -> SiteStatus {
        SiteStatus(
            name: entry.site.name, phase: entry.schedule.phase, expiresAt: entry.record?.expiresAt,
            lastLogin: entry.record?.lastLogin, nextRefresh: entry.schedule.nextLogin(now: now),
            lastError: entry.schedule.lastError, siteDown: entry.schedule.siteDown, attention: Self.attention(of: entry),
            nextRun: entry.schedule.nextRun(now: now), failures: entry.schedule.failures, retryAt: entry.schedule.retryAt(now: now),
            lastAttempt: entry.lastAttempt, prompt: entry.schedule.prompt,
            holdsLease: entry.schedule.following ? false : siteGate.holds(entry.site.name), learned: entry.learner?.learned)
    }

    /// The session currently served for `site` (nil: none, or no such site).
    public func record(for site: String) -> SessionRecord? { entries[site]?.record }

    /// Asks for a login now (`refresh`): clears needs-attention.
    public func refresh(_ site: String) {
        dispatch(.refreshRequested, to: site)
        rearm()
    }

    /// Stops every run in flight and every timer (shutdown); requests waiting for a login stop waiting.
    public func stopAll() {
        stopped = true
        sleeper?.cancel()
        sleeper = nil
        for entry in entries.values {
            for task in entry.runs.values { task.cancel() }
        }
        for name in loginWaiters.keys { resumeWaiters(of: name, loginEnded: false) }
        for name in waitingPrompts.keys { endPrompt(of: name, with: .failure(.cancelled)) }
        endEventStreams()
        endSiteListFollowers()
    }

    func add(_ site: SiteDefinition) async {
        seed &+= 0x9E37_79B9
        var entry = Entry(site: site, schedule: SiteSchedule(policy: SitePolicy(site: site, settings: settings), seed: seed, following: !siteGate.runsNewSites))
        do {
            entry.record = try await login.store.load(site: site.name)
        } catch {
            logger.warning("stored session unreadable; logging in anew", metadata: ["site": "\(site.name)", "error": "\(error)"])
        }
        let summary = entry.record.map { Self.summary($0, site: site, now: wallClock()) }
        entry.learner = makeLearner(for: site, record: entry.record)
        entries[site.name] = entry
        dispatch(.start(session: summary, enabled: site.enabled), to: site.name)
        logger.info("site added", metadata: ["site": "\(site.name)", "state": "\(entries[site.name]?.schedule.phase.rawValue ?? "-")"])
    }

    func update(_ site: SiteDefinition) {
        entries[site.name]?.site = site
        relearnIfAsked(site)
        dispatch(.siteChanged(SitePolicy(site: site, settings: settings), enabled: site.enabled), to: site.name)
        logger.info("site changed", metadata: ["site": "\(site.name)"])
    }

    func remove(_ name: String) {
        guard let entry = entries.removeValue(forKey: name) else { return }
        deadlineBySite[name] = nil
        for task in entry.runs.values { task.cancel() }
        endPrompt(of: name, with: .failure(.cancelled))
        gate.finish(site: name)
        resumeWaiters(of: name, loginEnded: true)
        lastReport[name] = nil
        lastRejection[name] = nil
        lastRemoteAsk[name] = nil
        siteGate.release(name)
        storedDuringLogin.remove(name)
        board.remove(name)
        logger.info("site removed", metadata: ["site": "\(name)"])
    }

    // MARK: Events and actions

    /// - Parameter notice: what a person reads if the event puts the site in needs-attention, when the run that
    ///   ended says it better than the schedule's last error (without the page the site answered).
    func dispatch(_ event: SiteSchedule.Event, to name: String, notice: String? = nil) {
        guard !stopped, let before = entries[name]?.schedule.phase else { return }
        let now = now
        updateLearnedTimings(of: name, now: now)
        // In place: a copy of the entry would make the schedule's collections copy on write.
        let actions = entries[name]?.schedule.handle(event, now: now) ?? []
        guard let schedule = entries[name]?.schedule else { return }
        deadlineBySite[name] = schedule.nextDeadline
        publishBoard(name)
        // A site's first state is logged by "site added"; its placeholder state before is nothing to report.
        if before != schedule.phase, !event.isStart {
            logger.info("state changed", metadata: [
                "site": "\(name)", "from": "\(before.rawValue)", "to": "\(schedule.phase.rawValue)",
                "next_refresh": "\(schedule.nextLogin(now: now).map { CookieTime.rfc3339($0) } ?? "-")",
            ])
            publish(.state(stateChange(of: name, from: before, schedule: schedule, notice: notice)))
            if schedule.phase == .needsAttention { logAttention(name) }
        } else if event.isStart, schedule.phase == .needsAttention {
            // A site that needs a person from its start is told like one that comes to need one.
            publish(.state(stateChange(of: name, from: before, schedule: schedule, notice: notice)))
        }
        for action in actions { start(action, for: name) }
    }
}

extension SiteSchedule.Event {
    var isStart: Bool {
        if case .start = self { return true }
        return false
    }
}

