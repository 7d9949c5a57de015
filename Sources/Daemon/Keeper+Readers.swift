import Foundation
import Scheduler
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
        if leasesGateRuns, entry.lease == nil {
            // Fleet mode: the keeper holding the lease judges it by its own clients' rules (never past a backoff).
            let ask = askHolder
            Task { await ask?(name, false) }
            if let wait, !(await waitForLogin(of: name, until: clock.now + wait)) { throw .timedOut(name, wait: wait) }
            guard let after = entries[name] else { throw .unknownSite(name) }
            return Self.status(of: after, now: now)
        }
        dispatch(.readerRefreshRequested, to: name)
        rearm()
        guard let after = entries[name] else { throw .unknownSite(name) }
        if !after.schedule.loginRunning {
            let planned = after.schedule.deadlines[.login] != nil
            guard planned, wait != nil else {
                throw .cannotLogIn(name, reason: Self.readerRefusal(after.schedule, planned: planned))
            }
        }
        if let wait, !(await waitForLogin(of: name, until: clock.now + wait)) { throw .timedOut(name, wait: wait) }
        guard let ended = entries[name] else { throw .unknownSite(name) }
        return Self.status(of: ended, now: now)
    }

    /// Why a reader's refresh started no login.
    private static func readerRefusal(_ schedule: SiteSchedule, planned: Bool) -> String {
        let next = planned ? "the next login is planned" : "no login is planned"
        if schedule.siteDown { return "the site is down (\(schedule.lastError ?? "no answer")); \(next)" }
        if schedule.consecutiveFailures > 0 {
            return "backing off after \(schedule.consecutiveFailures) failed login(s) (\(schedule.lastError ?? "no reason given")); " +
                "\(next), and only a manager may hasten it"
        }
        if !schedule.policy.canLogIn { return "the site logs in by hand" }
        return "the server asked to wait; \(next)"
    }
}
