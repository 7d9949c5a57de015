import Locking
import TestSupport
import Testing

@testable import Daemon

/// ``IdleWatch`` with a sleep the test ends itself: which quiet stretches end in the action, without timing.
@Suite struct IdleWatchTests {
    /// Sleeps that last until ``wakeAll()``; a cancelled one throws at once.
    final class ManualSleeper: Sendable {
        private struct State {
            var nextID: UInt64 = 0
            var pending: [UInt64: CheckedContinuation<Void, any Error>] = [:]
            var cancelledEarly: Set<UInt64> = []
        }
        private let state = Locked(State())

        var pendingCount: Int { state.withLock { $0.pending.count } }

        func sleep(_ duration: Duration) async throws {
            let id = state.withLock { state in
                state.nextID += 1
                return state.nextID
            }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let cancelled = state.withLock { state in
                        if state.cancelledEarly.remove(id) != nil { return true }
                        state.pending[id] = continuation
                        return false
                    }
                    if cancelled { continuation.resume(throwing: CancellationError()) }
                }
            } onCancel: {
                let continuation = state.withLock { state in
                    let continuation = state.pending.removeValue(forKey: id)
                    if continuation == nil { state.cancelledEarly.insert(id) }
                    return continuation
                }
                continuation?.resume(throwing: CancellationError())
            }
        }

        func wakeAll() {
            let all = state.withLock { state in
                defer { state.pending = [:] }
                return state.pending
            }
            for continuation in all.values { continuation.resume() }
        }
    }

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

    @Test func newsStartsTheQuietAgain() async throws {
        let fixture = Fixture()
        fixture.watch.activity()
        #expect(try await waitUntil(.seconds(10)) { fixture.sleeper.pendingCount == 1 })
        // The second piece of news cancels the first wait (its sleep throws) and starts another.
        fixture.watch.activity()
        fixture.watch.activity()
        try await fixture.endTheQuiet()
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
