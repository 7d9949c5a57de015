import Foundation
import Locking
import Scheduler

/// A clock a test moves itself: monotonic time for the keeper's timers and the wall time the keeper, the jar and the
/// demo site read, moving together (``advance(by:)``) unless the test sets the wall clock alone (``setWall(by:)``).
/// A sleep ends when the test moves the clock past its deadline, never by itself.
final class ManualClock: MonotonicClock {
    private struct Sleeper {
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var wall: Date
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelledEarly: Set<UInt64> = []
    }

    private let state: Locked<State>

    init(wall: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        state = Locked(State(now: ContinuousClock.now, wall: wall))
    }

    var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// The wall clock, for the keeper, the login path and the demo site.
    var wall: Date { state.withLock { $0.wall } }

    /// Both clocks move on by `duration`; every sleep whose deadline that reaches ends.
    func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now += duration
            state.wall = state.wall.addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
            let now = state.now
            let ids = state.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { state.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for continuation in due { continuation.resume() }
    }

    /// Only the wall clock moves (it was set, or the machine slept and NTP stepped it): timers are untouched.
    func setWall(by seconds: TimeInterval) {
        state.withLock { $0.wall = $0.wall.addingTimeInterval(seconds) }
    }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                let sleeper = state.sleepers.removeValue(forKey: id)
                if sleeper == nil { state.cancelledEarly.insert(id) }
                return sleeper?.continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }
}
