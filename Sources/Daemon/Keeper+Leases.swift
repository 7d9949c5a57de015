import Foundation
import Logging
import Scheduler
import Sessions

/// A site's lease as the keeper acts under it (fleet mode, SPEC section 11): until `deadline` on the keeper's
/// monotonic clock, and with its writes going through `store`, which refuses them once another keeper took the
/// site over (``Sessions/SessionStoreError/Kind/staleEpoch``).
public struct HeldLease: Sendable {
    public var site: String
    /// Incremented at every takeover; for the log.
    public var epoch: Int64
    /// When the keeper must stop acting on the site unless the lease is renewed first.
    public var deadline: ContinuousClock.Instant
    /// The session store fenced by this lease.
    public var store: any SessionStore

    public init(site: String, epoch: Int64, deadline: ContinuousClock.Instant, store: any SessionStore) {
        self.site = site
        self.epoch = epoch
        self.deadline = deadline
        self.store = store
    }

    /// Whether the lease may still be acted on at `now`.
    public func isValid(at now: ContinuousClock.Instant) -> Bool { now < deadline }
}

/// What a keeper of a fleet tells of its store and leases: `status`, `/v1/health` and `/metrics`.
public struct FleetState: Sendable, Hashable {
    /// Whether the database answers now.
    public var storeReachable = true
    /// Since when it does not, on the wall clock.
    public var unreachableSince: Date?
    /// Why it does not (never a password).
    public var unreachableReason: String?
    /// Leases this keeper holds now.
    public var leasesHeld = 0
    /// Session writes refused because another keeper took the site over meanwhile.
    public var staleWrites = 0

    public init() {}
}

// MARK: Fleet mode: a site's runs only under its lease

extension Keeper {
    /// Whether this keeper may act on `name` now: always outside fleet mode, else while it holds the site's lease.
    func mayAct(on name: String) -> Bool {
        guard leasesGateRuns else { return true }
        return entries[name]?.lease?.isValid(at: clock.now) ?? false
    }

    /// The login path a run of `name` uses: in fleet mode, storing through the store fenced by the site's lease
    /// (nil when the keeper does not hold it).
    func loginPath(for name: String) -> SiteLogin? {
        guard leasesGateRuns else { return login }
        guard let lease = entries[name]?.lease, lease.isValid(at: clock.now) else { return nil }
        return login.storing(in: lease.store)
    }

    /// The lease service's news (fleet mode): `held` are the leases this keeper holds now, renewed or newly taken;
    /// `lost` the sites whose lease it held and does not any more. A site newly held is planned from the session
    /// the store holds now; a site lost stops its runs at once (logged once) and follows the holder's sessions.
    public func leasesChanged(held: [HeldLease], lost: [String]) {
        guard leasesGateRuns, !stopped else { return }
        for name in lost { loseLease(of: name, reason: "another keeper took it or it expired before its renewal") }
        var taken: [String] = []
        for lease in held {
            guard entries[lease.site] != nil else { continue }
            if entries[lease.site]?.lease == nil { taken.append(lease.site) }
            entries[lease.site]?.lease = lease
        }
        // A site followed until now has the holder's session from the change feed: planned from it at once. One
        // with none fit to serve reads the store first (a session may be on its way), off the caller's path: the
        // lease service must not wait on thousands of reads while its leases run out.
        var toRead: [String] = []
        for name in taken {
            guard let entry = entries[name] else { continue }
            if usable(entry, minValid: nil) != nil {
                takeLease(of: name)
            } else {
                toRead.append(name)
            }
        }
        if !toRead.isEmpty {
            pendingLeaseReads.formUnion(toRead)
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
        fleet.leasesHeld = entries.values.filter { $0.lease != nil }.count
        rearm()
    }

    /// Plans a site whose lease this keeper took, from `stored` (read from the store) or the session it serves.
    private func takeLease(of name: String, stored: SessionRecord? = nil) {
        guard let entry = entries[name], let lease = entry.lease, entry.schedule.following, !stopped else { return }
        if let stored { adopt(stored, site: name) }
        logger.info("lease taken", metadata: ["site": "\(name)", "epoch": "\(lease.epoch)"])
        let summary = entries[name]?.record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        dispatch(.leaseTaken(session: summary), to: name)
        rearm()
    }

    /// Drops every lease whose deadline passed (the database did not answer its renewal in time, or the process
    /// was paused): their sites stop at once. The lease service calls it every renewal period, and a run checks
    /// its own lease before it starts.
    public func expireLeases() {
        guard leasesGateRuns, !stopped else { return }
        let now = clock.now
        for (name, entry) in entries {
            if let lease = entry.lease, !lease.isValid(at: now) { loseLease(of: name, reason: "its deadline passed before a renewal") }
        }
        rearm()
    }

    /// Every site kept, held or not: the sites whose leases the lease service takes.
    public func siteNames() -> [String] { entries.keys.sorted() }

    /// The sites this keeper holds, for the lease service's plan.
    public func heldSites() -> [String] {
        entries.compactMap { $0.value.lease == nil ? nil : $0.key }.sorted()
    }

    /// Gives back at most `count` held leases (above this keeper's share) and returns their sites, which follow
    /// the holder from now on. Only sites with no run in flight are chosen, so that no login is cut short for the
    /// sake of balance (the next holder would run it again: a site logged in twice); the choice and the release
    /// are one step of the actor, so no run starts between them. A login still waiting at the gate is dropped: it
    /// has sent nothing yet.
    public func releaseLeases(upTo count: Int) -> [String] {
        guard count > 0 else { return [] }
        let held = entries.filter { $0.value.lease != nil }
        let chosen = LeaseChoice.release(count, held: held.keys.sorted(), busy: Set(held.filter { !$0.value.runs.isEmpty }.keys))
        for name in chosen {
            entries[name]?.lease = nil
            stopRuns(of: name)
            logger.info("lease released to the fleet", metadata: ["site": "\(name)"])
        }
        fleet.leasesHeld = entries.values.filter { $0.lease != nil }.count
        return chosen
    }

    /// Sets how a client's need for a login is passed to the keeper holding a site's lease (``sessionFromHolder``,
    /// `refresh` of a site this keeper follows); `refresh` says a manager asked, not a client's `min_valid`/`wait`.
    public func setLoginRequester(_ ask: @escaping @Sendable (_ site: String, _ refresh: Bool) async -> Void) {
        askHolder = ask
    }

    /// Another keeper's client asked for a login of `name` (fleet mode). Acted on only while this keeper holds the
    /// site's lease, by the rules its own clients meet: `refresh` always; a client's need unless a login runs, the
    /// site backs off, is down or waits for a person, and at most once per ``reportInterval`` per site, so a fleet
    /// of clients cannot make it hammer the site.
    public func loginRequested(_ name: String, refresh: Bool) {
        guard let entry = entries[name], entry.lease?.isValid(at: clock.now) == true, entry.schedule.phase != .disabled else { return }
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

    /// The database's reachability changed (one log line per change is the store's).
    public func storeReachability(reachable: Bool, since: Date?, reason: String?) {
        fleet.storeReachable = reachable
        fleet.unreachableSince = reachable ? nil : since
        fleet.unreachableReason = reachable ? nil : reason
    }

    /// The store's state and this keeper's leases; nil outside fleet mode.
    public func fleetState() -> FleetState? { leasesGateRuns ? fleet : nil }

    func loseLease(of name: String, reason: String) {
        guard let lease = entries[name]?.lease else { return }
        entries[name]?.lease = nil
        stopRuns(of: name)
        logger.warning(
            "lease lost; the site's runs stop and it follows the keeper that holds it",
            metadata: ["site": "\(name)", "epoch": "\(lease.epoch)", "reason": "\(reason)"])
        fleet.leasesHeld = entries.values.filter { $0.lease != nil }.count
    }

    /// A session write refused because another keeper took the site over: logged, counted and dropped; the
    /// site's lease is gone.
    func staleWrite(site name: String, error: SessionStoreError) {
        fleet.staleWrites += 1
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
