import Locking
import TestSupport
import Testing

@testable import Daemon

/// ``IdleWatch`` with a sleep the test ends itself: which quiet stretches end in the action, without timing.
@Suite struct IdleWatchTests {
    struct Fixture {
        let sleeper = ManualSleeper()
        let actions = Locked(0)
        let watch: IdleWatch

        init() {
            let sleeper = sleeper
            let actions = actions
            watch = IdleWatch(after: .seconds(10), sleep: { try await sleeper.sleep($0) }) { actions.withLock { $0 += 1 } }
        }

        var count: Int { actions.withLock { $0 } }

        /// Waits until the armed timer sleeps, then ends its sleep.
        func endTheQuiet() async throws {
            #expect(try await waitUntil(.seconds(10)) { sleeper.pendingCount == 1 })
            sleeper.wakeAll()
        }
    }

    @Test func aQuietStretchEndsInTheActionOnce() async throws {
        let fixture = Fixture()
        fixture.watch.activity()
        #expect(fixture.watch.isArmed)
        try await fixture.endTheQuiet()
        #expect(try await waitUntil(.seconds(10)) { fixture.count == 1 })
        #expect(!fixture.watch.isArmed)
        // Nothing new happened: nothing is armed, and the action does not run again.
        #expect(fixture.sleeper.pendingCount == 0)
        #expect(fixture.count == 1)
    }

    /// News during a wait (an applied site, an ended connection) makes the timer wait again when the wait ends,
    /// without a new timer: the action comes after a whole wait with none.
    @Test func newsStartsTheQuietAgain() async throws {
        let fixture = Fixture()
        fixture.watch.activity()
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 1 })
        fixture.watch.activity()
        fixture.watch.activity()
        #expect(fixture.sleeper.pendingCount == 1)  // still the one timer
        fixture.sleeper.wakeAll()
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 1 })
        #expect(fixture.count == 0)
        fixture.sleeper.wakeAll()
        #expect(try await waitUntil(.seconds(10)) { fixture.count == 1 })
        #expect(fixture.count == 1)
    }

    @Test func noActionWhileARunIsInFlight() async throws {
        let fixture = Fixture()
        fixture.watch.activity()
        fixture.watch.runBegan()
        #expect(!fixture.watch.isArmed)
        fixture.watch.activity()  // a connection ended meanwhile
        #expect(!fixture.watch.isArmed)
        fixture.watch.runBegan()
        fixture.watch.runEnded()
        #expect(!fixture.watch.isArmed)  // one run is still in flight
        fixture.watch.runEnded()
        #expect(fixture.watch.isArmed)
        try await fixture.endTheQuiet()
        #expect(try await waitUntil(.seconds(10)) { fixture.count == 1 })
    }

    /// Requests during the quiet postpone the action: the timer waits again from its end, and acts only after a
    /// whole wait with none.
    @Test func requestsDuringTheQuietPostponeIt() async throws {
        let fixture = Fixture()
        fixture.watch.pulse()  // a request on a connection that stays open arms the watch
        #expect(fixture.watch.isArmed)
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 1 })
        fixture.watch.pulse()
        fixture.watch.pulse()
        #expect(fixture.watch.pulseCount == 3)
        fixture.sleeper.wakeAll()
        // It waits again instead of acting.
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 1 })
        #expect(fixture.count == 0)
        #expect(fixture.watch.isArmed)
        fixture.sleeper.wakeAll()
        #expect(try await waitUntil(.seconds(10)) { fixture.count == 1 })
        #expect(!fixture.watch.isArmed)
    }

    @Test func stoppedItNeverActs() async throws {
        let fixture = Fixture()
        fixture.watch.activity()
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 1 })
        fixture.watch.stop()
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 0 })
        fixture.watch.activity()
        fixture.watch.runBegan()
        fixture.watch.runEnded()
        #expect(!fixture.watch.isArmed)
        #expect(fixture.count == 0)
    }
}
