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
    }

    private struct Entry {
        var site: SiteDefinition
        var schedule: SiteSchedule
        var record: SessionRecord?
        /// Runs in flight for this site, cancelled when it is removed.
        var runs: [SiteSchedule.Action: Task<Void, Never>] = [:]
    }

    private let login: SiteLogin
    /// Each site's definition, session and schedule view, published on every change for the socket's
    /// readers, who need no actor hop for a session that is fit to serve (``servedNow(_:minValid:)``).
    public nonisolated let board = ServedBoard()
    private var settings: SchedulerSettings
    private let logger: Logger
    private let wallClock: @Sendable () -> Date
    private var entries: [String: Entry] = [:]
    private var gate: LoginGate
    private var sleeper: Task<Void, Never>?
    private var sleeperDeadline: ContinuousClock.Instant?
    private var seed: UInt64 = 0x5E55_10E5
    /// Set by ``stopAll()``: a run that ends after it (cancelled or not) starts nothing new and arms no timer.
    private var stopped = false
    /// Each site's earliest deadline, kept beside `entries` so that arming the one timer and finding the
    /// sites due need no copy of every site's entry (with ten thousand sites, copying them on each event
    /// made starting quadratic).
    private var deadlineBySite: [String: ContinuousClock.Instant] = [:]
    private var subscribers: [UInt64: AsyncStream<KeeperEvent>.Continuation] = [:]
    /// Requests waiting for a site's login to end, by site; resumed with false when their wait runs out.
    private var loginWaiters: [String: [UInt64: CheckedContinuation<Bool, Never>]] = [:]
    private var lastReport: [String: ContinuousClock.Instant] = [:]
    private var nextID: UInt64 = 0
    /// Both clocks when the keeper last woke: the next wake compares how far each moved.
    private var clockReference: Now?

    /// How far the wall clock may move apart from the monotonic clock between two wakes before the keeper takes
    /// it as a jump (the clock was set, or the machine slept) and plans every site again.
    public static let clockJumpTolerance: Duration = .seconds(2)

    /// A client's `report` is acted on at most once per this interval per site: a scraper that meets one dead
    /// session on many requests at once runs the check once, and cannot make the daemon hammer the site.
    public static let reportInterval: Duration = .seconds(10)

    /// - Parameters:
    ///   - login: the login path (client, store, credentials) every run goes through.
    ///   - wallClock: the wall clock (cookie expiry); timers always use the monotonic clock.
    public init(
        login: SiteLogin, settings: SchedulerSettings, logger: Logger,
        wallClock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.login = login
        self.settings = settings
        self.logger = logger
        self.wallClock = wallClock
        self.gate = LoginGate(maxConcurrent: settings.maxConcurrentLogins, perHostInterval: settings.perHostInterval)
    }

    private var now: Now { Now(monotonic: .now, wall: wallClock()) }

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
    }

    /// Every site's status, sorted by name.
    public func status() -> [SiteStatus] {
        let now = now
        return entries.values.map { Self.status(of: $0, now: now) }.sorted { $0.name < $1.name }
    }

    /// Every site with its definition and session, sorted by name (what the socket filters by `access`).
    public func snapshots() -> [SiteSnapshot] {
        let now = now
        return entries.values.map { SiteSnapshot(status: Self.status(of: $0, now: now), site: $0.site, record: $0.record) }
            .sorted { $0.status.name < $1.status.name }
    }

    /// One site's status, definition and session; nil when no such site is kept.
    public func snapshot(of name: String) -> SiteSnapshot? {
        entries[name].map { SiteSnapshot(status: Self.status(of: $0, now: now), site: $0.site, record: $0.record) }
    }

    private static func status(of entry: Entry, now: Now) -> SiteStatus {
        SiteStatus(
            name: entry.site.name, phase: entry.schedule.phase, expiresAt: entry.record?.expiresAt,
            lastLogin: entry.record?.lastLogin, nextRefresh: entry.schedule.nextLogin(now: now),
            lastError: entry.schedule.lastError, siteDown: entry.schedule.siteDown)
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
        endEventStreams()
    }

    private func add(_ site: SiteDefinition) async {
        seed &+= 0x9E37_79B9
        var entry = Entry(site: site, schedule: SiteSchedule(policy: SitePolicy(site: site, settings: settings), seed: seed))
        do {
            entry.record = try await login.store.load(site: site.name)
        } catch {
            logger.warning("stored session unreadable; logging in anew", metadata: ["site": "\(site.name)", "error": "\(error)"])
        }
        let summary = entry.record.map { Self.summary($0, site: site, now: wallClock()) }
        entries[site.name] = entry
        dispatch(.start(session: summary, enabled: site.enabled), to: site.name)
        logger.info("site added", metadata: ["site": "\(site.name)", "state": "\(entries[site.name]?.schedule.phase.rawValue ?? "-")"])
    }

    private func update(_ site: SiteDefinition) {
        entries[site.name]?.site = site
        dispatch(.siteChanged(SitePolicy(site: site, settings: settings), enabled: site.enabled), to: site.name)
        logger.info("site changed", metadata: ["site": "\(site.name)"])
    }

    private func remove(_ name: String) {
        guard let entry = entries.removeValue(forKey: name) else { return }
        deadlineBySite[name] = nil
        for task in entry.runs.values { task.cancel() }
        gate.finish(site: name)
        resumeWaiters(of: name, loginEnded: true)
        lastReport[name] = nil
        board.remove(name)
        logger.info("site removed", metadata: ["site": "\(name)"])
    }

    // MARK: Events and actions

    private func dispatch(_ event: SiteSchedule.Event, to name: String) {
        guard !stopped, let before = entries[name]?.schedule.phase else { return }
        let now = now
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
            publish(.state(site: name, time: wallClock(), from: before, to: schedule.phase))
        }
        for action in actions { start(action, for: name) }
    }

    private func start(_ action: SiteSchedule.Action, for name: String) {
        guard let site = entries[name]?.site else { return }
        switch action {
        case .logIn:
            gate.request(site: name, host: site.baseURL.host ?? "")
            admitLogins()
        case .check, .keepalive:
            entries[name]?.runs[action] = Task { await self.probe(action, site: site) }
        }
    }

    private func admitLogins() {
        guard !stopped else { return }
        for name in gate.admit(now: .now) {
            guard let site = entries[name]?.site else {
                gate.finish(site: name)
                continue
            }
            entries[name]?.runs[.logIn] = Task { await self.runLogin(site) }
        }
    }

    private func runLogin(_ site: SiteDefinition) async {
        let started = ContinuousClock.now
        let outcome: RunOutcome
        var record: SessionRecord?
        do {
            let result = try await login.run(site, events: Self.logging(logger))
            record = result.record
            outcome = .ok
        } catch {
            switch error {
            case .flow(let flowError): outcome = RunOutcome.classify(flowError, run: .login, now: wallClock())
            case .store(let storeError): outcome = .failed(reason: storeError.description)
            }
        }
        loginEnded(site.name, outcome: outcome, record: record, duration: ContinuousClock.now - started)
    }

    private func loginEnded(_ name: String, outcome: RunOutcome, record: SessionRecord?, duration: Duration) {
        gate.finish(site: name)
        guard let entry = entries[name] else { return }
        entries[name]?.runs[.logIn] = nil
        if let record { serve(record, site: name) }
        log("login", site: name, outcome: outcome, duration: duration)
        publish(.loginFinished(site: name, outcome: outcome.name, duration: duration))
        let summary = entries[name]?.record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        dispatch(.loginFinished(outcome, session: outcome == .ok ? summary : nil), to: name)
        resumeWaiters(of: name, loginEnded: true)
        admitLogins()
        rearm()
    }

    /// A check or keepalive with the stored cookies (read afresh: another process may have logged in).
    private func probe(_ action: SiteSchedule.Action, site: SiteDefinition) async {
        let started = ContinuousClock.now
        var record = entries[site.name]?.record
        // Only a record that differs from the one served is news; the served one may have changed meanwhile
        // (cookies a client handed back) and must not be replaced by what this probe started with.
        var storedElsewhere: SessionRecord?
        if let stored = try? await login.store.load(site: site.name) {
            if stored != record { storedElsewhere = stored }
            record = stored
        }
        let storage = SiteJar.makeStorage(for: site, clock: wallClock)
        for cookie in record?.liveCookies(at: wallClock()) ?? [] { storage.setCookie(cookie) }
        let engine = engine(for: site)
        // The session's User-Agent (a browser login's), which a site that binds sessions to it expects.
        var probed = site
        if let userAgent = record?.userAgent { probed.http.userAgent = userAgent }
        var outcome = RunOutcome.ok
        var renewed: SessionRecord?
        do {
            if action == .check {
                _ = try await engine.check(probed, storage: storage)
            } else {
                let result = try await engine.keepalive(probed, storage: storage)
                // A sliding session's renewed cookies are the session now: keep and store them, and rewrite the
                // outputs as after a login.
                if let current = record {
                    renewed = await storeRenewal(
                        of: current, storage: storage, expiresAt: result.essentialCookies.compactMap(\.expires).min(),
                        site: site, now: result.finishedAt)
                }
            }
        } catch {
            outcome = RunOutcome.classify(error, run: action == .check ? .check : .keepalive, now: wallClock())
        }
        probeEnded(action, site: site.name, outcome: outcome, record: renewed ?? storedElsewhere, duration: ContinuousClock.now - started)
    }

    private func probeEnded(_ action: SiteSchedule.Action, site name: String, outcome: RunOutcome, record: SessionRecord?, duration: Duration) {
        guard let entry = entries[name] else { return }
        entries[name]?.runs[action] = nil
        if let record, record.lastLogin >= (entry.record?.lastLogin ?? .distantPast) {
            let newer = entry.record.map { record.lastLogin > $0.lastLogin } ?? true
            serve(record, site: name)
            if newer { dispatch(.sessionStoredElsewhere(Self.summary(record, site: entry.site, now: wallClock())), to: name) }
        }
        log(action == .check ? "check" : "keepalive", site: name, outcome: outcome, duration: duration)
        let summary = record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        if action == .check {
            dispatch(.checkFinished(outcome), to: name)
        } else {
            dispatch(.keepaliveFinished(outcome, session: summary), to: name)
        }
        rearm()
    }

    // MARK: Sessions as clients ask for them (the socket API)

    /// A session fit to serve: valid now, its essential cookies present, and (with `minValid`) every essential
    /// cookie unexpired for at least `minValid` more. Without one, a request that may wait or asks for
    /// `minValid` starts a login now (unless one runs, which it shares), then waits up to `wait` for a login
    /// to end. A site waiting for a person (`needs-attention`) is never logged in by a client: only `refresh`
    /// or a changed file does that, so a scraper cannot lock an account out; nor is a site backing off after
    /// failures, or down: a waiting client waits for the login its schedule plans.
    public func session(for name: String, minValid: Duration?, wait: Duration?) async throws(ClientRequestError) -> ServedSession {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        if let served = usable(entry, minValid: minValid) { return served }
        guard minValid != nil || wait != nil else {
            throw .noSession(name, reason: entry.schedule.lastError ?? "no valid session yet")
        }
        guard entry.schedule.phase != .needsAttention else {
            throw .noSession(name, reason: "the site needs attention: \(entry.schedule.lastError ?? "a login was refused")")
        }
        // A site backing off after failed logins, or down, keeps its schedule: a client never hastens the next
        // attempt, so many clients cannot hammer a failing site. It may wait for the attempt already planned.
        let backingOff = entry.schedule.consecutiveFailures > 0 || entry.schedule.siteDown
        if !entry.schedule.loginRunning, !backingOff {
            dispatch(.refreshRequested, to: name)
            rearm()
        }
        let loginComing = entries[name].map { $0.schedule.loginRunning || (backingOff && $0.schedule.deadlines[.login] != nil) }
        guard loginComing == true else {
            throw .noSession(name, reason: entries[name]?.schedule.lastError ?? "no login can start now")
        }
        guard let wait else {
            throw .noSession(name, reason: backingOff
                ? "the last login failed (\(entry.schedule.lastError ?? "no reason given")); the next one is planned"
                : "no session valid long enough; a login started")
        }
        guard await waitForLogin(of: name, until: .now + wait) else { throw .timedOut(name, wait: wait) }
        guard let after = entries[name] else { throw .unknownSite(name) }
        if let served = usable(after, minValid: minValid) { return served }
        throw .noSession(name, reason: after.schedule.lastError ?? "the new session is valid for less than min_valid")
    }

    /// `refresh`: a login now (clears needs-attention); with `wait`, returns once it ended, with the site's
    /// status then.
    public func refresh(_ name: String, wait: Duration?) async throws(ClientRequestError) -> SiteStatus {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        dispatch(.refreshRequested, to: name)
        rearm()
        guard entries[name]?.schedule.loginRunning == true else {
            throw .cannotLogIn(name, reason: entries[name]?.schedule.lastError ?? "the site logs in manually or asked to wait")
        }
        if let wait, !(await waitForLogin(of: name, until: .now + wait)) { throw .timedOut(name, wait: wait) }
        guard let after = entries[name] else { throw .unknownSite(name) }
        return Self.status(of: after, now: now)
    }

    /// What became of a client's report.
    public enum ReportAnswer: Sendable, Hashable {
        /// The site's check runs now (or was already running).
        case checking
        /// Another report came less than ``Keeper/reportInterval`` ago: this one changes nothing.
        case ignored
    }

    /// A client says the served session failed: run the site's check now (it logs in only when the check
    /// says logged out), at most once per ``reportInterval`` per site.
    public func report(_ name: String) throws(ClientRequestError) -> ReportAnswer {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        guard entry.site.check != nil else { throw .noCheck(name) }
        let now = ContinuousClock.now
        if let last = lastReport[name], now - last < Self.reportInterval { return .ignored }
        lastReport[name] = now
        dispatch(.checkRequested, to: name)
        rearm()
        return .checking
    }

    /// Set-Cookie values a response from `url` carried, handed back by a client: they pass through the jar with
    /// the site's accept policy and limits, as a login's responses do, and the session that results is stored,
    /// written to the outputs and served.
    /// - Returns: how many values were accepted and rejected.
    public func setCookies(_ name: String, url: URL, values: [String]) async throws(ClientRequestError) -> (accepted: Int, rejected: Int) {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        guard let current = entry.record else { throw .noSession(name, reason: "no session to update yet") }
        let storage = SiteJar.makeStorage(for: entry.site, clock: wallClock)
        for cookie in current.liveCookies(at: wallClock()) { storage.setCookie(cookie) }
        let decisions = storage.setCookies(fromHeaders: values, for: url, mainDocumentURL: entry.site.baseURL)
        let accepted = decisions.filter { if case .stored = $0 { true } else { false } }.count
        if accepted > 0 {
            let essential = engine(for: entry.site).essentialCookies(entry.site, storage: storage)
            guard let renewed = await storeRenewal(
                of: current, storage: storage, expiresAt: essential.compactMap(\.expires).min(), site: entry.site, now: wallClock())
            else { return (accepted, decisions.count - accepted) }
            // The session is the same login's: its lastLogin stays, so the schedule keeps its plan.
            if entries[name]?.record?.lastLogin == renewed.lastLogin { serve(renewed, site: name) }
        }
        return (accepted, decisions.count - accepted)
    }

    private func usable(_ entry: Entry, minValid: Duration?) -> ServedSession? {
        ServedBoard.usable(site: entry.site, record: entry.record, session: entry.schedule.session, minValid: minValid, now: wallClock())
    }

    /// The session ``session(for:minValid:wait:)`` would return at once for `name`, read from the ``board``
    /// without waiting for the Keeper; nil when there is none fit to serve now (or no such site, or it is
    /// disabled): then only `session(for:minValid:wait:)` knows what to do and what to say.
    public nonisolated func servedNow(_ name: String, minValid: Duration?) -> ServedSession? {
        guard let entry = board.entry(of: name), entry.phase != .disabled else { return nil }
        return ServedBoard.usable(
            site: entry.site, record: entry.record, session: entry.session, minValid: minValid, now: wallClock(), generation: entry.generation)
    }

    /// Publishes `name`'s entry as it is now to the ``board``.
    private func publishBoard(_ name: String) {
        guard let entry = entries[name] else { return }
        board.publish(ServedBoard.Entry(site: entry.site, record: entry.record, session: entry.schedule.session, phase: entry.schedule.phase))
    }

    /// Waits until the site's next login ends (true) or `deadline` passes or the task is cancelled (false).
    private func waitForLogin(of name: String, until deadline: ContinuousClock.Instant) async -> Bool {
        nextID &+= 1
        let id = nextID
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            await self.resumeWaiter(id, of: name, loginEnded: false)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loginWaiters[name, default: [:]][id] = continuation
            }
        } onCancel: {
            Task { await self.resumeWaiter(id, of: name, loginEnded: false) }
        }
    }

    private func resumeWaiter(_ id: UInt64, of name: String, loginEnded: Bool) {
        loginWaiters[name]?.removeValue(forKey: id)?.resume(returning: loginEnded)
    }

    private func resumeWaiters(of name: String, loginEnded: Bool) {
        for waiter in (loginWaiters.removeValue(forKey: name) ?? [:]).values { waiter.resume(returning: loginEnded) }
    }

    // MARK: Events

    /// Every state change, cookie change and finished login from now on. Each subscriber has a buffer of
    /// `buffer` events: one that falls that far behind is dropped (its stream ends) rather than buffered
    /// without bound.
    public func events(buffer: Int = 256) -> AsyncStream<KeeperEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: KeeperEvent.self, bufferingPolicy: .bufferingOldest(max(1, buffer)))
        nextID &+= 1
        let id = nextID
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    /// Ends every event stream (shutdown: the socket's event readers finish their responses).
    public func endEventStreams() {
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }

    private func unsubscribe(_ id: UInt64) { subscribers[id] = nil }

    private func publish(_ event: KeeperEvent) {
        for (id, continuation) in subscribers {
            if case .dropped = continuation.yield(event) {
                subscribers[id] = nil
                continuation.finish()
                logger.warning("an event reader fell behind and was dropped", metadata: ["buffer": "full"])
            }
        }
    }

    /// Makes `record` the session served for `name`, telling subscribers when its cookies changed.
    private func serve(_ record: SessionRecord, site name: String) {
        guard let before = entries[name] else { return }
        entries[name]?.record = record
        publishBoard(name)
        guard before.record != record else { return }
        publish(.cookies(
            site: name, time: wallClock(), names: record.liveCookies(at: wallClock()).map(\.name), expiresAt: record.expiresAt))
    }

    /// The session after cookies changed without a login; stored and written to the outputs when it differs
    /// from `current`. Nil when nothing changed or it could not be stored (logged).
    private func storeRenewal(
        of current: SessionRecord, storage: CookieStorage, expiresAt: Date?, site: SiteDefinition, now: Date
    ) async -> SessionRecord? {
        let cookies = SessionRecord.persistable(storage.allCookies, keepSessionCookies: site.cookies.persistSessionCookies, now: now)
        let updated = SessionRecord(
            cookies: cookies, lastLogin: current.lastLogin, expiresAt: expiresAt, userAgent: current.userAgent, origins: current.origins)
        guard (try? updated.encoded()) != (try? current.encoded()) else { return nil }
        do {
            let failures = try await login.storeRenewal(
                updated, liveCookies: storage.allCookies.filter { !$0.isExpired(at: now) }, site: site)
            for failure in failures {
                logger.error("cannot write an output file", metadata: ["site": "\(site.name)", "error": "\(failure)"])
            }
            return updated
        } catch {
            logger.error("cannot store the renewed session", metadata: ["site": "\(site.name)", "error": "\(error)"])
            return nil
        }
    }

    private func engine(for site: SiteDefinition) -> FlowEngine {
        FlowEngine(
            client: login.client, credentials: login.credentials(site), plugins: login.plugins,
            environment: login.environment, now: wallClock)
    }

    // MARK: Timers

    /// Keeps exactly one sleeping task, for the earliest deadline of any site or of the gate.
    private func rearm() {
        guard !stopped else { return }
        let next = [deadlineBySite.values.min(), gate.nextAdmission()].compactMap { $0 }.min()
        guard let next else {
            sleeper?.cancel()
            sleeper = nil
            sleeperDeadline = nil
            return
        }
        if sleeperDeadline == next, sleeper != nil { return }
        sleeper?.cancel()
        sleeperDeadline = next
        sleeper = Task {
            do {
                try await Task.sleep(until: next, clock: .continuous)
            } catch {
                return
            }
            await self.tick()
        }
    }

    private func tick() {
        sleeper = nil
        sleeperDeadline = nil
        let now = now
        noticeClockJump(now)
        let due = deadlineBySite.filter { $0.value <= now.monotonic }.keys
        for name in due {
            for (timer, deadline) in entries[name]?.schedule.deadlines ?? [:] where deadline <= now.monotonic {
                dispatch(.timerFired(timer), to: name)
            }
        }
        admitLogins()
        rearm()
    }

    /// The system reported that the wall clock was set (``Platform/WallClockWatcher``): compare the clocks now
    /// rather than at the next timer. A set that moved the clock less than ``clockJumpTolerance`` (an NTP step
    /// of milliseconds) changes nothing.
    public func wallClockWasSet() {
        guard !stopped else { return }
        noticeClockJump(now)
        admitLogins()
        rearm()
    }

    /// Expiry is wall time and timers are monotonic, so a wall clock that was set (or a suspend) leaves every
    /// plan on the old clock: a session the new wall time says is over would be refreshed only when its old
    /// timer fires. Each wake, and each report from the kernel that the clock was set, compares both clocks;
    /// a difference past the tolerance is logged and every site's schedule plans again
    /// (``SiteSchedule/Event/clockJumped``).
    private func noticeClockJump(_ now: Now) {
        defer { clockReference = now }
        guard let reference = clockReference else { return }
        let wallMoved = now.wall.timeIntervalSince(reference.wall)
        let monotonicMoved = Double(reference.monotonic.duration(to: now.monotonic).wholeMilliseconds) / 1000
        let jump = wallMoved - monotonicMoved
        guard abs(jump) >= Double(Self.clockJumpTolerance.wholeMilliseconds) / 1000 else { return }
        logger.warning("the wall clock jumped (it was set, or the machine slept); planning every site again", metadata: [
            "jump_s": "\(Int(jump.rounded()))", "sites": "\(entries.count)",
        ])
        for name in entries.keys { dispatch(.clockJumped, to: name) }
    }

    // MARK: Helpers

    /// What the scheduler needs of a record: its times, and whether every essential cookie is there.
    static func summary(_ record: SessionRecord, site: SiteDefinition, now: Date) -> SessionSummary {
        let present = now < ServedBoard.essentialCookiesLiveUntil(site: site, record: record)
        return SessionSummary(lastLogin: record.lastLogin, expiresAt: record.expiresAt, essentialCookiesPresent: present)
    }

    /// What a login reports that belongs in the daemon's log (SPEC section 5: a plugin's standard error goes
    /// to the log, line by line, already masked by the engine; a flow's warnings, such as TLS verification
    /// off). Requests and steps are left to the one line per run.
    static func logging(_ logger: Logger) -> SessionEventSink {
        { event in
            guard case .flow(let flowEvent) = event else { return }
            switch flowEvent {
            case .pluginOutput(let site, let step, let line):
                logger.info("plugin: \(line)", metadata: ["site": "\(site)", "step": "\(step)"])
            case .warning(let site, let message):
                logger.warning("\(message)", metadata: ["site": "\(site)"])
            default:
                break
            }
        }
    }

    /// One line per run: site, what ran, outcome and duration, never a value.
    private func log(_ what: String, site: String, outcome: RunOutcome, duration: Duration) {
        var metadata: Logger.Metadata = ["site": "\(site)", "run": "\(what)", "ms": "\(duration.wholeMilliseconds)", "outcome": "\(outcome.name)"]
        if let reason = outcome.reason { metadata["error"] = "\(reason)" }
        if outcome == .ok {
            logger.info("\(what) finished", metadata: metadata)
        } else {
            logger.warning("\(what) failed", metadata: metadata)
        }
    }
}

extension SiteSchedule.Event {
    var isStart: Bool {
        if case .start = self { return true }
        return false
    }
}

/// Something that happened to a site, for the socket's event stream and metrics. Names and times, never a
/// cookie value.
public enum KeeperEvent: Sendable, Hashable {
    /// The site's state changed.
    case state(site: String, time: Date, from: SiteSchedule.Phase, to: SiteSchedule.Phase)
    /// The served session's cookies changed (a login, a keepalive's renewal, cookies a client handed back, a
    /// session another process stored): the live cookies' names and the session's end.
    case cookies(site: String, time: Date, names: [String], expiresAt: Date?)
    /// A login ended; `outcome` is ``RunOutcome/name``.
    case loginFinished(site: String, outcome: String, duration: Duration)
}

/// One site as the socket shows it: its status, its definition (for `access`) and its served session.
public struct SiteSnapshot: Sendable {
    public var status: Keeper.SiteStatus
    public var site: SiteDefinition
    public var record: SessionRecord?
}

/// A session fit to hand to a client, with the site it belongs to (for the jar's rules on `url`).
public struct ServedSession: Sendable {
    public var site: SiteDefinition
    public var record: SessionRecord
    /// The ``ServedBoard`` publication it was read from (0: read from the Keeper itself): equal for two reads
    /// of the same unchanged entry.
    public var generation: UInt64 = 0
    /// The session is fit to serve for a request made at `t` with `min_valid` `m` exactly when `t + m` is before
    /// this (as long as its publication is the same): ``isFit(until:at:minValid:)``.
    public var fitUntil: Date = .distantPast

    /// Whether a session fit until `until` serves a request made at `now` that asks for `minValid` more: when
    /// `now + minValid` is before `until`. The one fitness rule: the Keeper's board, the socket's kept answers
    /// and the CLI's stored session all apply it.
    public static func isFit(until: Date, at now: Date, minValid: Duration?) -> Bool {
        now.addingTimeInterval(minValid.map { $0 / .seconds(1) } ?? 0) < until
    }
}

/// Why a client's request about a site cannot be answered as asked. Names the site, never a value.
public enum ClientRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownSite(String)
    case disabled(String)
    /// No session fit to serve; `reason` says why (the last error, or what was asked).
    case noSession(String, reason: String)
    /// The wait for a login ran out.
    case timedOut(String, wait: Duration)
    /// A login was asked for but cannot start (a `login: manual` site, a server asking to wait).
    case cannotLogIn(String, reason: String)
    /// A report for a site without `check:`.
    case noCheck(String)

    public var description: String {
        switch self {
        case .unknownSite(let site): "no site named '\(site)'"
        case .disabled(let site): "site '\(site)' is disabled"
        case .noSession(let site, let reason): "site '\(site)' has no session to serve: \(reason)"
        case .timedOut(let site, let wait): "site '\(site)': no login finished within \(DurationText.format(wait))"
        case .cannotLogIn(let site, let reason): "site '\(site)' cannot log in now: \(reason)"
        case .noCheck(let site): "site '\(site)' has no check: (ask for a refresh instead)"
        }
    }
}
