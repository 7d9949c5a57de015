import Foundation
import Logging
import Scheduler
import Sessions

// MARK: The site gate: who may run a site now

extension Keeper {
    /// The login path a run of `name` uses now, as the site gate hands it (in fleet mode storing through the store
    /// fenced by the site's lease); nil when this keeper may not run the site now.
    func loginPath(for name: String) -> SiteLogin? {
        siteGate.loginPath(for: name, over: login, at: clock.now)
    }

    /// Whether this keeper may act on `name` now.
    func mayAct(on name: String) -> Bool { loginPath(for: name) != nil }

    /// The site gate changed. `change` is the gate's own update, run here so that no step of the keeper sees the
    /// gate between its change and the keeper's answer: a site closed stops its runs at once (logged once) and
    /// follows the holder's sessions; a site opened is planned from the session the store holds now.
    public func gateChanged(_ change: @Sendable (ContinuousClock.Instant) -> SiteGateChange) {
        let news = change(clock.now)
        guard !stopped else { return }
        for closed in news.closed where entries[closed.site] != nil { lostLease(of: closed.site, reason: closed.reason) }
        // A site followed until now has the holder's session from the change feed: planned from it at once. One
        // with none fit to serve reads the store first (a session may be on its way), off the caller's path: the
        // lease service must not wait on thousands of reads while its leases run out.
        var toRead: [String] = []
        for name in news.opened {
            guard let entry = entries[name] else {
                // Not a site of this keeper's sites/: nothing to run under it.
                siteGate.release(name)
                continue
            }
            if usable(entry, minValid: nil) != nil {
                takeLease(of: name)
            } else {
                toRead.append(name)
            }
        }
        if !toRead.isEmpty {
            pendingLeaseReads.formUnion(toRead)
            // Unstructured: the reads outlive this step of the actor, which must return to the lease service at
            // once; `pendingLeaseReads` tracks them (``isSettled``), and each ends in a step of the keeper.
            Task {
                for name in toRead {
                    let stored: SessionRecord?
                    do {
                        stored = try await self.login.store.load(site: name)
                    } catch {
                        self.logger.warning("cannot read the site's stored session", metadata: ["site": "\(name)", "error": "\(error)"])
                        stored = nil
                    }
                    self.pendingLeaseReads.remove(name)
                    self.takeLease(of: name, stored: stored)
                }
            }
        }
        rearm()
    }

    /// Plans a site the gate opened for, from `stored` (read from the store) or the session it serves.
    private func takeLease(of name: String, stored: SessionRecord? = nil) {
        guard let entry = entries[name], !siteGate.runsElsewhere(name), entry.schedule.following, !stopped else { return }
        if let stored { adopt(stored, site: name) }
        logger.info("lease taken", metadata: ["site": "\(name)"])
        let summary = entries[name]?.record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        dispatch(.leaseTaken(session: summary), to: name)
        rearm()
    }

    /// Every site kept, held or not: the sites whose leases the lease service takes.
    public func siteNames() -> [String] { entries.keys.sorted() }

    /// The sites this keeper holds, for the lease service's plan.
    public func heldSites() -> [String] {
        entries.keys.filter { siteGate.holds($0) == true }.sorted()
    }

    /// Gives back at most `count` held sites (above this keeper's share) and returns them; they follow the holder
    /// from now on. Only sites with no run in flight are chosen, so that no login is cut short for the sake of
    /// balance (the next holder would run it again: a site logged in twice); the choice and the release are one
    /// step of the actor, so no run starts between them. A login still waiting at the gate is dropped: it has
    /// sent nothing yet.
    public func releaseLeases(upTo count: Int) -> [String] {
        guard count > 0 else { return [] }
        let held = entries.filter { siteGate.holds($0.key) == true }
        let chosen = LeaseChoice.release(count, held: held.keys.sorted(), busy: Set(held.filter { !$0.value.runs.isEmpty }.keys))
        for name in chosen {
            siteGate.release(name)
            stopRuns(of: name)
            logger.info("lease released to the fleet", metadata: ["site": "\(name)"])
        }
        return chosen
    }

    /// Another keeper's client asked for a login of `name` (fleet mode). Acted on only while this keeper may run
    /// the site, by the rules its own clients meet: `refresh` always; a client's need unless a login runs, the
    /// site backs off, is down or waits for a person, and at most once per ``reportInterval`` per site, so a fleet
    /// of clients cannot make it hammer the site.
    public func loginRequested(_ name: String, refresh: Bool) {
        guard let entry = entries[name], mayAct(on: name), entry.schedule.phase != .disabled else { return }
        if refresh {
            dispatch(.refreshRequested, to: name)
            rearm()
            return
        }
        guard entry.schedule.phase != .needsAttention, !entry.schedule.loginRunning else { return }
        guard entry.schedule.consecutiveFailures == 0, !entry.schedule.siteDown else { return }
        let now = clock.now
        if let last = lastRemoteAsk[name], now - last < Self.reportInterval { return }
        lastRemoteAsk[name] = now
        dispatch(.refreshRequested, to: name)
        rearm()
    }

    /// The store's state and this keeper's leases, as the site gate tells them; nil outside fleet mode.
    public func fleetState() -> FleetState? { siteGate.state() }

    /// The keeper may not run `name` any more: the gate lets go of it, and its runs stop (logged once).
    func loseLease(of name: String, reason: String) {
        guard siteGate.release(name) else { return }
        lostLease(of: name, reason: reason)
    }

    /// The gate let go of `name`: its runs stop and it follows the holder.
    private func lostLease(of name: String, reason: String) {
        stopRuns(of: name)
        logger.warning(
            "lease lost; the site's runs stop and it follows the keeper that holds it",
            metadata: ["site": "\(name)", "reason": "\(reason)"])
    }

    /// A session write refused because another keeper took the site over: logged, counted and dropped; the
    /// site's lease is gone.
    func staleWrite(site name: String, error: SessionStoreError) {
        siteGate.countStaleWrite()
        logger.warning("session write refused for a stale lease epoch; dropped", metadata: ["site": "\(name)", "error": "\(error)"])
        loseLease(of: name, reason: "a write was refused for its epoch")
    }

    /// Cancels the site's runs in flight (their ends are fed to the schedule as any run's end) and drops a login
    /// still waiting for its turn at the gate, then has the schedule follow the holder.
    private func stopRuns(of name: String) {
        guard let entry = entries[name] else { return }
        for task in entry.runs.values { task.cancel() }
        let queued = entry.runs[.logIn] == nil && entry.schedule.loginRunning
        dispatch(.leaseLost, to: name)
        if queued { dropQueuedLogin(of: name) }
    }

    /// A login that waited at the gate and may not run any more (the lease went): it ends as cancelled.
    func dropQueuedLogin(of name: String) {
        gate.finish(site: name)
        dispatch(.loginFinished(.cancelled, session: nil), to: name)
        resumeWaiters(of: name, loginEnded: true)
    }
}

/// Which held leases to give back: a pure choice, tested without a database.
enum LeaseChoice {
    /// At most `count` of `held` (sorted), never a busy one: a login cut short would be run again by the next
    /// holder, and a site would be logged in twice.
    static func release(_ count: Int, held: [String], busy: Set<String>) -> [String] {
        Array(held.filter { !busy.contains($0) }.prefix(max(0, count)))
    }
}
