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
        rearm()
    }

    /// Every site's status, sorted by name.
    public func status() -> [SiteStatus] {
        let now = now
        return entries.values.map { entry in
            SiteStatus(
                name: entry.site.name, phase: entry.schedule.phase, expiresAt: entry.record?.expiresAt,
                lastLogin: entry.record?.lastLogin, nextRefresh: entry.schedule.nextLogin(now: now),
                lastError: entry.schedule.lastError, siteDown: entry.schedule.siteDown)
        }.sorted { $0.name < $1.name }
    }

    /// The session currently served for `site` (nil: none, or no such site).
    public func record(for site: String) -> SessionRecord? { entries[site]?.record }

    /// Asks for a login now (`refresh`): clears needs-attention.
    public func refresh(_ site: String) {
        dispatch(.refreshRequested, to: site)
        rearm()
    }

    /// Stops every run in flight and every timer (shutdown).
    public func stopAll() {
        stopped = true
        sleeper?.cancel()
        sleeper = nil
        for entry in entries.values {
            for task in entry.runs.values { task.cancel() }
        }
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
        for task in entry.runs.values { task.cancel() }
        gate.finish(site: name)
        logger.info("site removed", metadata: ["site": "\(name)"])
    }

    // MARK: Events and actions

    private func dispatch(_ event: SiteSchedule.Event, to name: String) {
        guard !stopped, var entry = entries[name] else { return }
        let before = entry.schedule.phase
        let actions = entry.schedule.handle(event, now: now)
        entries[name] = entry
        // A site's first state is logged by "site added"; its placeholder state before is nothing to report.
        if before != entry.schedule.phase, !event.isStart {
            logger.info("state changed", metadata: [
                "site": "\(name)", "from": "\(before.rawValue)", "to": "\(entry.schedule.phase.rawValue)",
                "next_refresh": "\(entry.schedule.nextLogin(now: now).map { CookieTime.rfc3339($0) } ?? "-")",
            ])
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
            let result = try await login.run(site)
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
        guard var entry = entries[name] else { return }
        entry.runs[.logIn] = nil
        if let record { entry.record = record }
        entries[name] = entry
        log("login", site: name, outcome: outcome, duration: duration)
        let summary = entries[name]?.record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        dispatch(.loginFinished(outcome, session: outcome == .ok ? summary : nil), to: name)
        admitLogins()
        rearm()
    }

    /// A check or keepalive with the stored cookies (read afresh: another process may have logged in).
    private func probe(_ action: SiteSchedule.Action, site: SiteDefinition) async {
        let started = ContinuousClock.now
        var record = entries[site.name]?.record
        if let stored = try? await login.store.load(site: site.name) { record = stored }
        let storage = SiteJar.makeStorage(for: site, clock: wallClock)
        for cookie in record?.liveCookies(at: wallClock()) ?? [] { storage.setCookie(cookie) }
        let engine = FlowEngine(
            client: login.client, credentials: login.credentials(site), plugins: login.plugins,
            environment: login.environment, now: wallClock)
        var outcome = RunOutcome.ok
        var renewed: SessionRecord?
        do {
            if action == .check {
                _ = try await engine.check(site, storage: storage)
            } else {
                let result = try await engine.keepalive(site, storage: storage)
                // A sliding session's renewed cookies are the session now: keep and store them.
                if let current = record {
                    let cookies = SessionRecord.persistable(
                        storage.allCookies, keepSessionCookies: site.cookies.persistSessionCookies, now: result.finishedAt)
                    let expiry = result.essentialCookies.compactMap(\.expires).min()
                    let updated = SessionRecord(cookies: cookies, lastLogin: current.lastLogin, expiresAt: expiry, userAgent: current.userAgent)
                    if (try? updated.encoded()) != (try? current.encoded()) {
                        try? await login.store.save(updated, site: site.name)
                        renewed = updated
                    }
                }
            }
        } catch {
            outcome = RunOutcome.classify(error, run: action == .check ? .check : .keepalive, now: wallClock())
        }
        probeEnded(action, site: site.name, outcome: outcome, record: renewed ?? record, duration: ContinuousClock.now - started)
    }

    private func probeEnded(_ action: SiteSchedule.Action, site name: String, outcome: RunOutcome, record: SessionRecord?, duration: Duration) {
        guard var entry = entries[name] else { return }
        entry.runs[action] = nil
        if let record, record.lastLogin >= (entry.record?.lastLogin ?? .distantPast) {
            let newer = entry.record.map { record.lastLogin > $0.lastLogin } ?? true
            entry.record = record
            entries[name] = entry
            if newer { dispatch(.sessionStoredElsewhere(Self.summary(record, site: entry.site, now: wallClock())), to: name) }
        } else {
            entries[name] = entry
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

    // MARK: Timers

    /// Keeps exactly one sleeping task, for the earliest deadline of any site or of the gate.
    private func rearm() {
        guard !stopped else { return }
        let deadlines = entries.values.compactMap(\.schedule.nextDeadline) + [gate.nextAdmission()].compactMap { $0 }
        guard let next = deadlines.min() else {
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
        for (name, entry) in entries {
            for (timer, deadline) in entry.schedule.deadlines where deadline <= now.monotonic {
                dispatch(.timerFired(timer), to: name)
            }
        }
        admitLogins()
        rearm()
    }

    // MARK: Helpers

    /// What the scheduler needs of a record: its times, and whether every essential cookie is there.
    static func summary(_ record: SessionRecord, site: SiteDefinition, now: Date) -> SessionSummary {
        let live = record.liveCookies(at: now)
        let present = site.cookies.essential.allSatisfy { name in live.contains { $0.name == name } }
        return SessionSummary(lastLogin: record.lastLogin, expiresAt: record.expiresAt, essentialCookiesPresent: present)
    }

    /// One line per run: site, what ran, outcome and duration, never a value.
    private func log(_ what: String, site: String, outcome: RunOutcome, duration: Duration) {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        var metadata: Logger.Metadata = ["site": "\(site)", "run": "\(what)", "ms": "\(milliseconds)", "outcome": "\(outcome.name)"]
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
