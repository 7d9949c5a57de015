@testable import Daemon
import Foundation
import Locking
import Scheduler
import Sessions
import TestSupport
import Testing
import Vault

/// The keeper's site gate (who may run a site now): one machine's, which runs every site here, and fleet mode's
/// lease gate, against the real demo site and a real vault on the test's clock.
@Suite(.serialized) struct SiteGateTests {
    @Test func oneMachinesGateRunsEverySiteThroughTheKeepersOwnLoginPathAndOwnsItsSessions() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let gate = OpenSiteGate()
            let path = gate.loginPath(for: "demo", over: world.login, at: world.clock.now)
            #expect(path?.store is VaultSessionStore, "the keeper's own store, unfenced")
            #expect(gate.runsNewSites && gate.ownsStoredSessions)
            #expect(!gate.runsElsewhere("demo") && gate.holds("demo") == nil && gate.state() == nil)
            #expect(!gate.release("demo"), "there is nothing to let go of")

            // The keeper behind it logs in at once, and a site dropped from sites/ loses its stored session.
            let keeper = world.keeper()
            await keeper.apply([try world.site()])
            try await KeeperTests.settle(keeper)
            #expect(world.requests.count("POST /login") == 1)
            #expect(await keeper.status().first?.holdsLease == nil)
            await keeper.apply([])
            #expect(try await VaultSessionStore(vault: world.vault).load(site: "demo") == nil)
            await keeper.stopAll()
        }
    }

    @Test func theLeaseGateLetsASiteRunOnlyUntilItsDeadlineAndThroughItsLeasesStore() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let gate = LeaseGate()
            let keeper = KeeperLeaseTests.fleetKeeper(world, log: CapturedLog(), gate: gate)
            await keeper.apply([try world.site()])
            #expect(gate.loginPath(for: "demo", over: world.login, at: world.clock.now) == nil, "not held: not run here")
            #expect(gate.runsElsewhere("demo") && gate.holds("demo") == false)
            #expect(!gate.runsNewSites && !gate.ownsStoredSessions)

            let stand = KeeperLeaseTests.FencedStand(inner: VaultSessionStore(vault: world.vault), stale: Locked(false), writes: Locked(0))
            let deadline = world.clock.now + .seconds(10)
            await gate.leasesChanged(held: [HeldLease(site: "demo", epoch: 7, deadline: deadline, store: stand)], lost: [], in: keeper)
            let path = gate.loginPath(for: "demo", over: world.login, at: world.clock.now)
            #expect(path?.store is KeeperLeaseTests.FencedStand, "a run stores through the store its lease fences")
            #expect(gate.epoch(of: "demo") == 7 && gate.state()?.leasesHeld == 1 && !gate.runsElsewhere("demo"))
            #expect(gate.loginPath(for: "demo", over: world.login, at: deadline) == nil, "not at its deadline")

            // Past the deadline without a renewal, the gate closes and the keeper follows.
            try await KeeperTests.settle(keeper)
            try await world.advance(keeper, by: .seconds(11))
            await gate.expireLeases(in: keeper)
            #expect(gate.holds("demo") == false && gate.state()?.leasesHeld == 0)
            #expect(await keeper.status().first?.holdsLease == false)
            await keeper.stopAll()
        }
    }

    @Test func aLeaseOfASiteTheKeeperDoesNotKeepIsNotHeld() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let gate = LeaseGate()
            let keeper = KeeperLeaseTests.fleetKeeper(world, log: CapturedLog(), gate: gate)
            await keeper.apply([try world.site()])
            let stand = KeeperLeaseTests.FencedStand(inner: VaultSessionStore(vault: world.vault), stale: Locked(false), writes: Locked(0))
            await gate.leasesChanged(
                held: [HeldLease(site: "elsewhere", epoch: 1, deadline: world.clock.now + .seconds(60), store: stand)], lost: [], in: keeper)
            #expect(gate.holds("elsewhere") == false && gate.state()?.leasesHeld == 0)
            await keeper.stopAll()
        }
    }

    @Test func theLeaseGateTellsTheStoresReachabilityStaleWritesAndAsksTheHolder() async {
        let gate = LeaseGate()
        let since = Date(timeIntervalSince1970: 1_800_000_000)
        gate.storeReachability(reachable: false, since: since, reason: "connection refused")
        gate.countStaleWrite()
        #expect(gate.state()?.storeReachable == false && gate.state()?.unreachableSince == since)
        #expect(gate.state()?.unreachableReason == "connection refused" && gate.state()?.staleWrites == 1)
        gate.storeReachability(reachable: true, since: nil, reason: nil)
        #expect(gate.state()?.storeReachable == true && gate.state()?.unreachableReason == nil)

        let asked = Locked<[String]>([])
        await gate.askForLogin(of: "demo", refresh: false)
        #expect(asked.withLock { $0 }.isEmpty, "no one to ask yet: nothing happens")
        gate.setLoginRequester { site, refresh in asked.withLock { $0.append("\(site) \(refresh)") } }
        await gate.askForLogin(of: "demo", refresh: true)
        #expect(asked.withLock { $0 } == ["demo true"])
    }
}
