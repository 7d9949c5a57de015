import Daemon
import Foundation
import Locking
import Logging
import PostgresStore
import ServiceLifecycle

/// Fleet mode's part of the daemon (SPEC section 11, docs/FLEET.md), a `Service` placed before the
/// ``KeeperService``: it runs the fleet's ``PostgresStore/PostgresStore`` (its pool and change listener), opens it
/// (again and again while the database is unreachable at start), and once per renewal period renews this keeper's
/// leases in one statement, takes its share of the free ones (``PostgresStore/LeasePlan``), gives back what is
/// above its share, and tells the keeper's ``Daemon/LeaseGate`` what it holds and what it lost. When the database does not answer,
/// the keeper's leases run out by their own deadlines: it takes none, starts no login, and serves what it holds.
/// On shutdown (after the keeper stopped) it releases every lease and leaves the fleet.
public final class FleetService: Service, Sendable {
    private let store: PostgresStore
    private let gate: LeaseGate
    private let keeper: Keeper
    private let logger: Logger
    private let opened = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// - Parameter gate: the keeper's site gate, which this service drives.
    public init(store: PostgresStore, gate: LeaseGate, keeper: Keeper, logger: Logger) {
        self.store = store
        self.gate = gate
        self.keeper = keeper
        self.logger = logger
    }

    /// Returns once the store is open (the schema upgraded, the keyring unlocked), or at once when it is; the
    /// keeper loads its sites only then.
    public func waitUntilOpen() async {
        await withCheckedContinuation { continuation in
            let open = opened.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    public func run() async throws {
        gate.setLoginRequester { [store] site, refresh in
            // Lost when the database does not answer: the asking client's wait runs out.
            try? await store.askForLogin(of: site, kind: refresh ? .refresh : .wanted)
        }
        let requests = Task { [store, keeper] in
            for await request in store.loginRequests() { await keeper.loginRequested(request.site, refresh: request.kind == .refresh) }
        }
        let runner = Task { await store.run() }
        let reachability = Task { [store, gate] in
            for await state in store.reachability.changes() {
                switch state {
                case .reachable: gate.storeReachability(reachable: true, since: nil, reason: nil)
                case let .unreachable(since, reason): gate.storeReachability(reachable: false, since: since, reason: reason)
                }
            }
        }
        // Whichever ends first: a graceful shutdown, or a store that cannot be opened whatever the wait.
        let failure = await withTaskGroup(of: PostgresStoreError?.self) { group in
            group.addTask {
                try? await gracefulShutdown()
                return nil
            }
            group.addTask { await self.keepLeases() }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        // Any waiter still waiting (shutdown before the store opened) goes on; the keeper is stopping.
        markOpen()
        await store.close()
        reachability.cancel()
        requests.cancel()
        runner.cancel()
        await runner.value
        if let failure { throw failure }
    }

    /// Opens the store, then renews, takes and gives back leases once per renewal period until cancelled.
    /// Returns the error when the store cannot be opened for a reason waiting does not cure (a wrong key, a
    /// schema newer than this keeper): the daemon stops with it.
    private func keepLeases() async -> PostgresStoreError? {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await store.open(createIfMissing: true)
                break
            } catch {
                guard case .unreachable = error.kind else {
                    logger.critical("cannot open the fleet's store", metadata: ["error": "\(error)"])
                    return error
                }
                // Reachability logs the database's state once per change; this says what waits on it.
                if delay == .milliseconds(100) {
                    logger.error("cannot open the fleet's store; sites load once it answers", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, store.leases.renewalPeriod)
            }
        }
        markOpen()
        let period = store.leases.renewalPeriod
        var search = FreeLeaseSearch()
        while !Task.isCancelled {
            let started = ContinuousClock.now
            await renewOnce(&search)
            try? await Task.sleep(until: started + period)
        }
        return nil
    }

    /// One renewal period's work: renew all (one statement), take the share and the sites left free too long,
    /// give back what is above the share, tell the keeper.
    func renewOnce(_ search: inout FreeLeaseSearch) async {
        let leases = store.leases
        let sites = await keeper.siteNames()
        do {
            try leases.know(sites: sites)
            let renewal = try await leases.renewAll()
            var held = Dictionary(renewal.held.map { ($0.site, $0) }, uniquingKeysWith: { _, last in last })
            let plan = LeasePlan.plan(held: held.count, sites: sites.count, liveKeepers: renewal.liveKeepers)
            if search.shouldLook(wanted: plan.acquire, sites: sites.count, liveKeepers: renewal.liveKeepers, freeSeen: !renewal.available.isEmpty) {
                let taken = try await leases.acquireAvailable(among: sites.filter { held[$0] == nil }, limit: plan.acquire)
                for lease in taken { held[lease.site] = lease }
                search.found(taken.count, of: plan.acquire)
            }
            // A site free for longer than a renewal period is taken whatever the share: the count of live keepers
            // may lag, and a site must never be left without a keeper.
            let overdue = renewal.available.filter { $0.expiredFor > leases.renewalPeriod && held[$0.site] == nil }.map(\.site)
            if !overdue.isEmpty {
                for lease in try await leases.acquireAvailable(among: overdue, limit: overdue.count) { held[lease.site] = lease }
            }
            if plan.release > 0 {
                for name in await keeper.releaseLeases(upTo: plan.release) {
                    guard let lease = held.removeValue(forKey: name) else { continue }
                    try await leases.release(lease)
                }
            }
            await gate.leasesChanged(
                held: held.values.map { HeldLease(site: $0.site, epoch: $0.epoch, deadline: $0.deadline, store: store.sessions(fencedBy: $0)) },
                lost: renewal.lost, in: keeper)
        } catch {
            // Unreachable (reachability says so once) or refused: what runs out, runs out by its deadline.
            await gate.expireLeases(in: keeper)
        }
    }

    private func markOpen() {
        let waiters = opened.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Whether a keeper below its share looks for free leases this renewal period: a pure rule, tested without a
/// database. Sites never leased have no row, so only a look finds them; but a keeper one lease short of its
/// share in a fleet where every site is held would look every period, each look a statement naming every
/// site. It looks again only once something changed: the sites, the live keepers, or a lease seen free.
struct FreeLeaseSearch: Sendable, Hashable {
    private var sites = -1
    private var liveKeepers = -1
    private var nothingFree = false

    /// Whether to look now for `wanted` leases, given the fleet as this renewal saw it.
    mutating func shouldLook(wanted: Int, sites: Int, liveKeepers: Int, freeSeen: Bool) -> Bool {
        if sites != self.sites || liveKeepers != self.liveKeepers || freeSeen { nothingFree = false }
        self.sites = sites
        self.liveKeepers = liveKeepers
        return wanted > 0 && !nothingFree
    }

    /// A look took `taken` of the `wanted` leases; fewer means none is free now.
    mutating func found(_ taken: Int, of wanted: Int) {
        nothingFree = taken < wanted
    }
}
