import Locking
@testable import PostgresStore
import Testing
import TestSupport

/// `withDeadline`: the caller gets the answer or the deadline, whichever comes first, and an answer that comes
/// after the caller stopped waiting (a connection made late) is handed to `discardLate` rather than dropped.
@Suite struct DeadlineTests {
    /// Holds every waiter until it is opened.
    final class Gate: Sendable {
        private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    @Test func anAnswerInTimeIsReturnedAndNotDiscarded() async throws {
        let discarded = Locked<[Int]>([])
        let value = try await withDeadline(.seconds(60), sleep: { try await Task.sleep(for: $0) }, discardLate: { late in
            discarded.withLock { $0.append(late) }
        }) { 7 }
        #expect(value == 7)
        #expect(discarded.withLock { $0 }.isEmpty)
    }

    @Test func anAnswerAfterTheDeadlineIsDiscarded() async throws {
        let gate = Gate()
        let discarded = Locked<[Int]>([])
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(1), sleep: { _ in }, discardLate: { late in
                discarded.withLock { $0.append(late) }
            }) {
                await gate.wait()
                return 42
            }
        }
        gate.open()
        #expect(try await waitUntil(.seconds(10)) { discarded.withLock { $0 } == [42] })
    }

    @Test func anAnswerAfterTheCallerWasCancelledIsDiscarded() async throws {
        let gate = Gate()
        let started = Gate()
        let discarded = Locked<[Int]>([])
        let caller = Task {
            try await withDeadline(.seconds(60), sleep: { try await Task.sleep(for: $0) }, discardLate: { late in
                discarded.withLock { $0.append(late) }
            }) {
                started.open()
                await gate.wait()
                return 5
            }
        }
        await started.wait()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        gate.open()
        #expect(try await waitUntil(.seconds(10)) { discarded.withLock { $0 } == [5] })
    }
}
