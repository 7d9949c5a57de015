@testable import Daemon
import Foundation
import Locking
import Logging
import Scheduler
import Sessions
import SiteConfig
import TestSupport
import Testing
import Vault

/// Fleet mode in the keeper (SPEC section 11), against the real demo site and a real vault on the test's clock: a
/// site runs only under its lease, writes through the lease's store, stops at once when the lease goes, and a
/// write refused for a stale epoch is logged, counted and dropped.
@Suite(.serialized) struct KeeperLeaseTests {
    /// The lease's store: the vault's sessions, refusing every write once `stale` is set, as the fleet's database
    /// does once another keeper took the site over.
    struct FencedStand: SessionStore {
        let inner: VaultSessionStore
        let stale: Locked<Bool>
        let writes: Locked<Int>

        func load(site: String) async throws(SessionStoreError) -> SessionRecord? { try await inner.load(site: site) }

        func save(_ record: SessionRecord, site: String) async throws(SessionStoreError) {
            guard !stale.withLock({ $0 }) else {
                throw SessionStoreError(kind: .staleEpoch, site: site, detail: "write refused for a stale lease epoch; dropped")
            }
            writes.withLock { $0 += 1 }
            try await inner.save(record, site: site)
        }

        func remove(site: String) async throws(SessionStoreError) -> Bool { try await inner.remove(site: site) }
    }

    static func fleetKeeper(_ world: KeeperTests.World, log: CapturedLog, gate: LeaseGate = LeaseGate()) -> Keeper {
        Keeper(
            login: world.login, settings: SchedulerSettings(maxConcurrentLogins: 4, perHostInterval: .zero, jitter: 0),
            logger: log.logger(), clock: world.clock, wallClock: { [clock = world.clock] in clock.wall }, siteGate: gate)
    }

    /// A fleet keeper of the world's demo site that holds the site's lease until `lease` from now (epoch
    /// `epoch`), writing through a stand that refuses every write when `stale`; with its log and the stand.
    static func holder(
        _ world: KeeperTests.World, lease: Duration, epoch: Int64 = 1, stale: Bool = false
    ) async throws -> (Keeper, CapturedLog, FencedStand, LeaseGate) {
        let log = CapturedLog()
        let gate = LeaseGate()
        let keeper = fleetKeeper(world, log: log, gate: gate)
        await keeper.apply([try world.site()])
        let stand = FencedStand(inner: VaultSessionStore(vault: world.vault), stale: Locked(stale), writes: Locked(0))
        await gate.leasesChanged(
            held: [HeldLease(site: "demo", epoch: epoch, deadline: world.clock.now + lease, store: stand)], lost: [], in: keeper)
        return (keeper, log, stand, gate)
    }

    @Test func withoutItsLeaseASiteIsNeverLoggedInAndServesWhatTheHolderStores() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let log = CapturedLog()
            let keeper = Self.fleetKeeper(world, log: log)
            await keeper.apply([try world.site()])
            try await world.advance(keeper, by: .seconds(5))
            #expect(world.requests.count("POST /login") == 0)
            #expect(await keeper.status().first?.holdsLease == false)
            #expect(await keeper.status().first?.phase == .loggingIn)

            // The holder (another keeper) logs in and stores; its change reaches this keeper.
            let holder = world.keeper()
            await holder.apply([try world.site()])
            try await KeeperTests.settle(holder)
            await holder.stopAll()
            await keeper.storeChanged([.session(site: "demo")])
            #expect(await keeper.status().first?.phase == .valid)
            #expect(await keeper.record(for: "demo") != nil)
            try await world.advance(keeper, by: .seconds(5))
            #expect(world.requests.count("POST /login") == 1, "only the holder logged in")
            await keeper.stopAll()
        }
    }

    @Test func underItsLeaseASiteLogsInOnceThroughTheLeasesStoreAndStopsWhenTheLeaseEnds() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let (keeper, log, stand, gate) = try await Self.holder(world, lease: .seconds(5))
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 1)
            #expect(stand.writes.withLock { $0 } == 1, "the login stored through the lease's store")
            #expect(await keeper.status().first?.holdsLease == true)
            #expect(await keeper.fleetState()?.leasesHeld == 1)

            // No renewal: once the deadline passes the keeper stops acting on the site, and says so once.
            try await world.advance(keeper, by: .seconds(6))
            await gate.expireLeases(in: keeper)
            await gate.expireLeases(in: keeper)
            #expect(await keeper.status().first?.holdsLease == false)
            #expect(log.lines(containing: "lease lost").count == 1)
            let checks = world.requests.count("GET /api/me")
            try await world.advance(keeper, by: .seconds(5))
            #expect(world.requests.count("GET /api/me") == checks, "no check runs without the lease")
            #expect(await keeper.status().first?.phase == .valid, "the session it has is still served")
            await keeper.stopAll()
        }
    }

    @Test func aWriteRefusedForAStaleEpochIsLoggedCountedAndDropped() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let (keeper, log, _, _) = try await Self.holder(world, lease: .seconds(60), epoch: 4, stale: true)
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 1)
            #expect(await keeper.fleetState()?.staleWrites == 1)
            #expect(log.lines(containing: "session write refused for a stale lease epoch").count == 1)
            #expect(await keeper.status().first?.holdsLease == false, "the lease is gone with the refused write")
            #expect(try await VaultSessionStore(vault: world.vault).load(site: "demo") == nil, "nothing was stored")
            // It does not try again without its lease.
            try await world.advance(keeper, by: .seconds(10))
            #expect(world.requests.count("POST /login") == 1)
            await keeper.stopAll()
        }
    }

    @Test func aLostLeaseIsNoticedFromTheRenewalAndTheSiteFollows() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let (keeper, log, _, gate) = try await Self.holder(world, lease: .seconds(60))
            try await KeeperTests.settle(keeper)
            await gate.leasesChanged(held: [], lost: ["demo"], in: keeper)
            #expect(await keeper.status().first?.holdsLease == false)
            #expect(log.lines(containing: "lease lost").count == 1)
            #expect(await keeper.releaseLeases(upTo: 1).isEmpty, "a site not held is not released")
            await keeper.stopAll()
        }
    }

    @Test func aLeaseGivenBackForBalanceIsChosenAndReleasedInOneStep() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let (keeper, log, _, _) = try await Self.holder(world, lease: .seconds(3600))
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 1)
            #expect(await keeper.releaseLeases(upTo: 0).isEmpty)
            #expect(await keeper.releaseLeases(upTo: 3) == ["demo"], "an idle held site is given back")
            #expect(await keeper.status().first?.holdsLease == false)
            #expect(await keeper.fleetState()?.leasesHeld == 0)
            #expect(log.lines(containing: "lease released to the fleet").count == 1)
            let checks = world.requests.count("GET /api/me")
            try await world.advance(keeper, by: .seconds(30))
            #expect(world.requests.count("GET /api/me") == checks && world.requests.count("POST /login") == 1, "it acts no more")
            #expect(await keeper.status().first?.phase == .valid, "the session it has is still served")
            await keeper.stopAll()
        }
    }

    @Test func aClientOfAFollowerWaitsForTheHoldersLogin() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let gate = LeaseGate()
            let follower = Self.fleetKeeper(world, log: CapturedLog(), gate: gate)
            let asked = Locked<[String]>([])
            gate.setLoginRequester { site, refresh in asked.withLock { $0.append("\(site) \(refresh)") } }
            await follower.apply([try world.site()])
            let client = Task { try await follower.session(for: "demo", minValid: nil, wait: .seconds(30)) }
            #expect(try await waitUntil(.seconds(10)) { asked.withLock { $0 } == ["demo false"] }, "the holder was not asked")

            // The holder's login, as its store change reaches the follower.
            let holder = world.keeper()
            await holder.apply([try world.site()])
            try await KeeperTests.settle(holder)
            await holder.stopAll()
            await follower.storeChanged([.session(site: "demo")])
            let served = try await client.value
            #expect(try await VaultSessionStore(vault: world.vault).load(site: "demo") == served.record)
            #expect(world.requests.count("POST /login") == 1, "only the holder logged in")
            await follower.stopAll()
        }
    }

    @Test func aRefreshOfAFollowedSiteIsPassedToTheHolderAsAManagerOrAReaderAsked() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let gate = LeaseGate()
            let follower = Self.fleetKeeper(world, log: CapturedLog(), gate: gate)
            let asked = Locked<[String]>([])
            gate.setLoginRequester { site, refresh in asked.withLock { $0.append("\(site) \(refresh)") } }
            await follower.apply([try world.site()])
            _ = try await follower.refresh("demo", wait: nil, byManager: true)
            _ = try await follower.refresh("demo", wait: nil, byManager: false)
            #expect(try await waitUntil(.seconds(10)) { asked.withLock { $0 }.sorted() == ["demo false", "demo true"] })
            try await world.advance(follower, by: .seconds(2))
            #expect(world.requests.count("POST /login") == 0, "the follower itself never logs in")
            await follower.stopAll()
        }
    }

    @Test func theHolderActsOnAnotherKeepersClientByItsOwnRules() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let gate = LeaseGate()
            let keeper = Self.fleetKeeper(world, log: CapturedLog(), gate: gate)
            await keeper.apply([try world.site()])
            // Not held: nothing happens.
            await keeper.loginRequested("demo", refresh: false)
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 0)
            let stand = FencedStand(inner: VaultSessionStore(vault: world.vault), stale: Locked(false), writes: Locked(0))
            await gate.leasesChanged(
                held: [HeldLease(site: "demo", epoch: 1, deadline: world.clock.now + .seconds(3600), store: stand)], lost: [], in: keeper)
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 1)
            // A client's need: one login, and a second ask within the report interval changes nothing.
            await keeper.loginRequested("demo", refresh: false)
            try await KeeperTests.settle(keeper)
            await keeper.loginRequested("demo", refresh: false)
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 2)
            // A manager's refresh is never held back.
            await keeper.loginRequested("demo", refresh: true)
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 3)
            await keeper.stopAll()
        }
    }

    @Test func releasingForBalanceNeverCutsARunShort() {
        #expect(LeaseChoice.release(2, held: ["a", "b", "c"], busy: ["a"]) == ["b", "c"])
        #expect(LeaseChoice.release(5, held: ["a", "b"], busy: ["a", "b"]).isEmpty)
        #expect(LeaseChoice.release(0, held: ["a"], busy: []).isEmpty)
    }
}
