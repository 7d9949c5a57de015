import CookieJar
import Foundation
import Scheduler
import Sessions
import SiteConfig

// MARK: Sessions as clients ask for them (the socket API), and their waits for a login

extension Keeper {
    /// A session fit to serve: valid now, its essential cookies present, and (with `minValid`) every essential
    /// cookie unexpired for at least `minValid` more. Without one, a request that may wait or asks for
    /// `minValid` starts a login now (unless one runs, which it shares), then waits up to `wait` for a login
    /// to end. A site waiting for a person (`needs-attention`) is never logged in by a client: only `refresh`
    /// or a changed file does that, so a scraper cannot lock an account out; nor is a site backing off after
    /// failures, or down: a waiting client waits for the login its schedule plans.
    ///
    /// A reader (`byManager` false, SPEC section 8) shares one budget of logins with every other reader of the
    /// site (``SiteSchedule/readerBudgetRefusal(_:)``: one per `refresh.min_interval`, no more in a day than
    /// `max_failures_per_day`), never moves a `login: manual` site, and asks for no login a fresh session could
    /// not satisfy: a `min_valid` as long as the site's sessions last is refused
    /// (``ClientRequestError/minValidTooLong(_:minValid:lifetime:)``).
    public func session(
        for name: String, minValid: Duration?, wait: Duration?, byManager: Bool = true
    ) async throws(ClientRequestError) -> ServedSession {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        if let served = usable(entry, minValid: minValid) { return served }
        guard minValid != nil || wait != nil else {
            throw .noSession(name, reason: entry.schedule.lastError ?? "no valid session yet")
        }
        guard entry.schedule.phase != .needsAttention else {
            throw .noSession(name, reason: "the site needs attention: \(entry.schedule.lastError ?? "a login was refused")")
        }
        if !byManager, let minValid, let lifetime = Self.sessionLifetime(entry), minValid >= lifetime {
            throw .minValidTooLong(name, minValid: minValid, lifetime: lifetime)
        }
        if siteGate.runsElsewhere(name) { return try await sessionFromHolder(of: name, minValid: minValid, wait: wait) }
        // A site backing off after failed logins, or down, keeps its schedule: a client never hastens the next
        // attempt, so many clients cannot hammer a failing site. It may wait for the attempt already planned.
        let backingOff = entry.schedule.consecutiveFailures > 0 || entry.schedule.siteDown
        if !entry.schedule.loginRunning, !backingOff {
            dispatch(byManager ? .refreshRequested : .readerRefreshRequested, to: name)
            rearm()
        }
        let loginComing = entries[name].map { $0.schedule.loginRunning || (backingOff && $0.schedule.deadlines[.login] != nil) }
        guard loginComing == true else {
            if !byManager, let budget = entries[name]?.schedule.readerBudgetRefusal(now) { throw .cannotLogIn(name, reason: budget) }
            throw .noSession(name, reason: entries[name]?.schedule.lastError ?? "no login can start now")
        }
        guard let wait else {
            throw .noSession(name, reason: backingOff
                ? "the last login failed (\(entry.schedule.lastError ?? "no reason given")); the next one is planned"
                : "no session valid long enough; a login started")
        }
        guard await waitForLogin(of: name, until: clock.now + wait) else { throw .timedOut(name, wait: wait) }
        guard let after = entries[name] else { throw .unknownSite(name) }
        if let served = usable(after, minValid: minValid) { return served }
        throw .noSession(name, reason: after.schedule.lastError ?? "the new session is valid for less than min_valid")
    }

    /// `refresh`: a login now (clears needs-attention); with `wait`, returns once it ended, with the site's
    /// status then.
    public func refresh(_ name: String, wait: Duration?) async throws(ClientRequestError) -> SiteStatus {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        if siteGate.runsElsewhere(name) {
            // Another keeper runs the site (it holds the lease): it logs in, and its new session ends the wait.
            // Unstructured: the ask goes on while this request waits for the holder's session, and may outlive it.
            Task { [siteGate] in await siteGate.askForLogin(of: name, refresh: true) }
            if let wait, !(await waitForLogin(of: name, until: clock.now + wait)) { throw .timedOut(name, wait: wait) }
            guard let after = entries[name] else { throw .unknownSite(name) }
            return status(of: after, now: now)
        }
        dispatch(.refreshRequested, to: name)
        rearm()
        guard entries[name]?.schedule.loginRunning == true else {
            throw .cannotLogIn(name, reason: entries[name]?.schedule.lastError ?? "the site logs in manually or asked to wait")
        }
        if let wait, !(await waitForLogin(of: name, until: clock.now + wait)) { throw .timedOut(name, wait: wait) }
        guard let after = entries[name] else { throw .unknownSite(name) }
        return status(of: after, now: now)
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
        let now = clock.now
        if let last = lastReport[name], now - last < Self.reportInterval { return .ignored }
        lastReport[name] = now
        dispatch(.checkRequested, to: name)
        rearm()
        return .checking
    }

    /// Set-Cookie values a response from `url` carried, handed back by a client: they pass through the jar with
    /// the site's accept policy and limits, as a login's responses do, and the session that results is stored,
    /// written to the outputs and served.
    ///
    /// With `byManager` false (a reader's proxied request, SPEC section 10) a change of whose session it is is
    /// not taken on the reader's word: see ``adoptReaderChange(_:current:storage:)``.
    /// - Returns: how many values were accepted and rejected (all of them rejected when a reader's change was
    ///   not adopted).
    public func setCookies(
        _ name: String, url: URL, values: [String], byManager: Bool = true
    ) async throws(ClientRequestError) -> (accepted: Int, rejected: Int) {
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        guard let current = entry.record else { throw .noSession(name, reason: "no session to update yet") }
        let storage = SiteJar.makeStorage(for: entry.site, clock: wallClock)
        for cookie in current.liveCookies(at: wallClock()) { storage.setCookie(cookie) }
        let decisions = storage.setCookies(fromHeaders: values, for: url, mainDocumentURL: entry.site.baseURL)
        let accepted = decisions.filter { if case .stored = $0 { true } else { false } }.count
        guard accepted > 0 else { return (0, decisions.count) }
        if !byManager, Self.identity(of: storage.allCookies, site: entry.site, now: wallClock())
            != Self.identity(of: current.cookies, site: entry.site, now: wallClock())
        {
            guard await adoptReaderChange(entry.site, current: current, storage: storage) else { return (0, decisions.count) }
            return (accepted, decisions.count - accepted)
        }
        await adopt(storage, over: current, site: entry.site)
        return (accepted, decisions.count - accepted)
    }

    /// Stores and serves the cookies of `storage` as the session `current` renewed.
    func adopt(_ storage: CookieStorage, over current: SessionRecord, site: SiteDefinition) async {
        let essential = engine(for: site).essentialCookies(site, storage: storage)
        guard let renewed = await storeRenewal(
            of: current, storage: storage, expiresAt: essential.compactMap(\.expires).min(), site: site, now: wallClock())
        else { return }
        // The session is the same login's: its lastLogin stays, so the schedule keeps its plan.
        if entries[site.name]?.record?.lastLogin == renewed.lastLogin { serve(renewed, site: site.name) }
    }

    /// A site another keeper runs (it holds the lease): that keeper is asked for a login (it applies the
    /// rules it applies to its own clients), and with `wait` the request waits for the next session it stores.
    func sessionFromHolder(of name: String, minValid: Duration?, wait: Duration?) async throws(ClientRequestError) -> ServedSession {
        // Asked from a task that runs once this request waits, so the answer cannot come before the wait begins.
        Task { [siteGate] in await siteGate.askForLogin(of: name, refresh: false) }
        guard let wait else {
            throw .noSession(name, reason: "no session valid long enough; the keeper holding the site's lease was asked for a login")
        }
        guard await waitForLogin(of: name, until: clock.now + wait) else { throw .timedOut(name, wait: wait) }
        guard let after = entries[name] else { throw .unknownSite(name) }
        if let served = usable(after, minValid: minValid) { return served }
        throw .noSession(name, reason: after.schedule.lastError ?? "the new session is valid for less than min_valid")
    }

    /// How long a session of the site lasts: from its login to the first expiry of its essential cookies, as
    /// the session served now shows it; nil when it is not known (no session yet) or unbounded (cookies that
    /// do not expire).
    static func sessionLifetime(_ entry: Entry) -> Duration? {
        guard let record = entry.record else { return nil }
        let until = ServedBoard.essentialCookiesLiveUntil(site: entry.site, record: record)
        guard until != .distantFuture, until > record.lastLogin else { return nil }
        return .seconds(Int64(until.timeIntervalSince(record.lastLogin)))
    }

    func usable(_ entry: Entry, minValid: Duration?) -> ServedSession? {
        ServedBoard.usable(site: entry.site, record: entry.record, session: entry.schedule.session, minValid: minValid, now: wallClock())
    }

    /// Waits until the site's next login ends (true) or `deadline` passes or the task is cancelled (false).
    func waitForLogin(of name: String, until deadline: ContinuousClock.Instant) async -> Bool {
        nextID &+= 1
        let id = nextID
        // Unstructured: the timer must run while this task waits on a continuation, which no child task can outlast.
        let timer = Task { [clock] in
            try? await clock.sleep(until: deadline, tolerance: nil)
            // The task runs on the keeper (it was made there), so this is a plain call.
            self.resumeWaiter(id, of: name, loginEnded: false)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loginWaiters[name, default: [:]][id] = continuation
            }
        } onCancel: {
            // Unstructured: a cancellation handler is synchronous and runs off the keeper; the keeper is reached by a hop.
            Task { await self.resumeWaiter(id, of: name, loginEnded: false) }
        }
    }

    func resumeWaiter(_ id: UInt64, of name: String, loginEnded: Bool) {
        loginWaiters[name]?.removeValue(forKey: id)?.resume(returning: loginEnded)
    }

    func resumeWaiters(of name: String, loginEnded: Bool) {
        for waiter in (loginWaiters.removeValue(forKey: name) ?? [:]).values { waiter.resume(returning: loginEnded) }
    }
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

    /// Whether a session fit until `until` serves a request made at `now` that asks for `minValid` more: when
    /// `now + minValid` is before `until`. The one fitness rule: the Keeper's board and the CLI's stored
    /// session both apply it.
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
    /// An answer for a prompt that does not wait: none does (`waiting` nil), or the one that waits is not the
    /// one `asked`.
    case noPrompt(String, asked: String?, waiting: String?)
    /// A reader's `min_valid` that no fresh session could satisfy: the site's sessions last `lifetime`.
    case minValidTooLong(String, minValid: Duration, lifetime: Duration)

    public var description: String {
        switch self {
        case .unknownSite(let site): "no site named '\(site)'"
        case .disabled(let site): "site '\(site)' is disabled"
        case .noSession(let site, let reason): "site '\(site)' has no session to serve: \(reason)"
        case .timedOut(let site, let wait): "site '\(site)': no login finished within \(DurationText.format(wait))"
        case .cannotLogIn(let site, let reason): "site '\(site)' cannot log in now: \(reason)"
        case .noCheck(let site): "site '\(site)' has no check: (ask for a refresh instead)"
        case .noPrompt(let site, let asked, let waiting):
            if let waiting {
                "site '\(site)' waits for an answer to '\(waiting)', not to '\(asked ?? "")'"
            } else {
                "site '\(site)' is not waiting for an answer\(asked.map { " to '\($0)'" } ?? "")"
            }
        case .minValidTooLong(let site, let minValid, let lifetime):
            "site '\(site)': min_valid \(DurationText.format(minValid)) is not less than the site's session lifetime " +
                "(\(DurationText.format(lifetime))): no login could give such a session"
        }
    }
}

