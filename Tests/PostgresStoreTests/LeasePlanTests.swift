@testable import PostgresStore
import Testing

/// The pure parts: the fair share of leases and the reconnection delays.
@Suite struct LeasePlanTests {
    @Test func aKeeperTakesItsFairShareAndGivesBackTheRest() {
        #expect(LeasePlan.plan(held: 0, sites: 30, liveKeepers: 3) == LeasePlan(share: 10, acquire: 10, release: 0))
        #expect(LeasePlan.plan(held: 30, sites: 30, liveKeepers: 3) == LeasePlan(share: 10, acquire: 0, release: 20))
        // A keeper died: the share grows, the survivors take its sites.
        #expect(LeasePlan.plan(held: 10, sites: 30, liveKeepers: 2) == LeasePlan(share: 15, acquire: 5, release: 0))
        // Uneven counts round up, so the shares always cover every site.
        #expect(LeasePlan.plan(held: 0, sites: 10, liveKeepers: 3).share == 4)
        #expect(LeasePlan.plan(held: 0, sites: 0, liveKeepers: 3) == LeasePlan(share: 0, acquire: 0, release: 0))
        // A count of zero (the heartbeat not yet seen) counts this keeper.
        #expect(LeasePlan.plan(held: 0, sites: 5, liveKeepers: 0).share == 5)
    }

    @Test func reconnectionDelaysDoubleUpToTheCapAndStartOverAfterASuccess() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        let delays = (0..<6).map { _ in backoff.delay() }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        backoff.reset()
        #expect(backoff.delay() == .milliseconds(100))
    }

    @Test func aLeaseDeadlineComesBeforeTheDatabasesEnd() {
        #expect(SiteLeases.safetyMargin(for: .seconds(15)) == .seconds(1))
        #expect(SiteLeases.safetyMargin(for: .seconds(3)) == .milliseconds(300))
    }
}
