import CookieJar
import Foundation
import LoginFlow
import Scheduler
import Sessions
import SiteConfig

// MARK: A refresh asked for by a reader, who may read a site but not manage it (SPEC section 8)

extension Keeper {
    /// `refresh` as the socket hands it on: a manager's (the daemon's uid, root, `socket.allow_uids`) is
    /// ``refresh(_:wait:)``, a login now that clears needs-attention. A reader's starts a login only when the
    /// site's schedule could start one itself (``SiteSchedule/Event/readerRefreshRequested``): never while the
    /// site waits for a person, backs off after a failed login or outage, or is asked to wait by the server,
    /// so no reader can drive refused logins past `max_failures_per_day` and lock the account. A login that
    /// runs already is shared; with `wait`, a reader also waits for the login the schedule plans.
    /// - Throws: ``ClientRequestError/cannotLogIn(_:reason:)`` with the reason when no login runs or is
    ///   planned, or (without `wait`) none could start now.
    public func refresh(_ name: String, wait: Duration?, byManager: Bool) async throws(ClientRequestError) -> SiteStatus {
        if byManager { return try await refresh(name, wait: wait) }
        guard let entry = entries[name] else { throw .unknownSite(name) }
        guard entry.schedule.phase != .disabled else { throw .disabled(name) }
        guard entry.schedule.phase != .needsAttention else {
            throw .cannotLogIn(name, reason: "the site needs attention (\(entry.schedule.lastError ?? "a login was refused")); only a manager may clear it")
        }
        if siteGate.runsElsewhere(name) {
            // Another keeper runs the site: it judges the need by its own clients' rules (never past a backoff).
            // Unstructured: the ask goes on while this request waits for the holder's session, and may outlive it.
            Task { [siteGate] in await siteGate.askForLogin(of: name, refresh: false) }
            if let wait, !(await waitForLogin(of: name, until: clock.now + wait)) { throw .timedOut(name, wait: wait) }
            guard let after = entries[name] else { throw .unknownSite(name) }
            return status(of: after, now: now)
        }
        dispatch(.readerRefreshRequested, to: name)
        rearm()
        guard let after = entries[name] else { throw .unknownSite(name) }
        if !after.schedule.loginRunning {
            let planned = after.schedule.deadlines[.login] != nil
            guard planned, wait != nil else {
                throw .cannotLogIn(name, reason: Self.readerRefusal(after.schedule, planned: planned, now: now))
            }
        }
        if let wait, !(await waitForLogin(of: name, until: clock.now + wait)) { throw .timedOut(name, wait: wait) }
        guard let ended = entries[name] else { throw .unknownSite(name) }
        return status(of: ended, now: now)
    }

    /// Why a reader's refresh started no login.
    private static func readerRefusal(_ schedule: SiteSchedule, planned: Bool, now: Now) -> String {
        let next = planned ? "the next login is planned" : "no login is planned"
        if schedule.acceptsReaderRefresh(now), let budget = schedule.readerBudgetRefusal(now) { return "\(budget); \(next)" }
        if schedule.siteDown { return "the site is down (\(schedule.lastError ?? "no answer")); \(next)" }
        if schedule.consecutiveFailures > 0 {
            return "backing off after \(schedule.consecutiveFailures) failed login(s) (\(schedule.lastError ?? "no reason given")); " +
                "\(next), and only a manager may hasten it"
        }
        if !schedule.policy.canLogIn { return "the site logs in by hand" }
        return "the server asked to wait; \(next)"
    }

    // MARK: Cookies a reader's proxied request brought

    /// The cookies that say whose session it is: the live essential ones (every live cookie when the site names
    /// none), as name, domain, path and value. A change of them is a new session (another login's, another
    /// account's, or a value someone chose); a change of the others is the site's bookkeeping.
    static func identity(of cookies: [Cookie], site: SiteDefinition, now: Date) -> Set<[String]> {
        let essential = site.cookies.essential
        return Set(cookies.filter { cookie in
            !cookie.isExpired(at: now) && (essential.isEmpty || essential.contains { $0.matches(cookie, baseURL: site.baseURL) })
        }.map { [$0.name, $0.domain, $0.path, $0.value] })
    }

    /// A reader's proxied request changed whose session it is (``identity(of:site:now:)``): a site rotating its
    /// session, or the reader switching the account (a login form posted through the route, a page that logs in
    /// as someone else, a value the reader chose). Only the site's `check` can tell them apart, so the change is
    /// adopted only once the check passes on it (a check that names the account, as docs/SITES.md advises, then
    /// refuses another account's session), and with what the check's own answer set (a site that rotates on
    /// every answer rotated it once more). Otherwise, and when the served session changed meanwhile, the session
    /// stays as it was: if the site ended it, the next answer that meets it starts a login.
    /// - Returns: whether the change was adopted.
    func adoptReaderChange(_ site: SiteDefinition, current: SessionRecord, storage: CookieStorage) async -> Bool {
        let name = site.name
        guard site.check != nil else {
            logger.notice("a reader's request changed whose session it is; not adopted: the site has no check to confirm it", metadata: [
                "site": "\(name)",
            ])
            return false
        }
        do {
            _ = try await login.check(site, storage: storage, userAgent: current.userAgent)
        } catch {
            logger.notice("a reader's request changed whose session it is; not adopted: the site's check did not pass on it", metadata: [
                "site": "\(name)", "error": "\(error)",
            ])
            return false
        }
        guard entries[name]?.record == current, let checked = entries[name]?.site else {
            logger.info("a reader's session change not adopted: the session changed while it was checked", metadata: ["site": "\(name)"])
            return false
        }
        await adopt(storage, over: current, site: checked)
        return true
    }
}
