import Locking
import Synchronization

/// Runs an action once the daemon has been quiet for a while: for ``delay``, no login, check or keepalive in
/// flight, begun or ended, no sites applied, no client's request answered and no client's connection ended.
/// The daemon gives back the memory its code occupies then (``Platform/ResidentCode``): most of its code runs only
/// during runs, and a client's request touches a part of the rest.
///
/// Nothing polls: news arms one timer, and the action runs once per quiet stretch. While the timer runs, news
/// only counts (an atomic increment; a request's on the socket's event loop), and the timer, when it ends, waits
/// again if any came meanwhile. So the action comes between one and two ``delay``s after the last news, a client
/// that keeps asking keeps the daemon from releasing, and a stream of short connections creates no task each.
public final class IdleWatch: Sendable {
    public let delay: Duration
    private let action: @Sendable () -> Void
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state = Locked(State())
    /// News since start (answers, ended connections, applied sites); read by the timer.
    private let news = Atomic<UInt64>(0)
    /// Answers counted by ``pulse()``.
    private let answers = Atomic<UInt64>(0)
    /// Mirrors `State.timer != nil`, so that news takes no lock while a timer runs.
    private let armed = Atomic<Bool>(false)

    private struct State {
        var runsInFlight = 0
        /// Tells a timer that fired from the one armed after it.
        var generation: UInt64 = 0
        var timer: Task<Void, Never>?
        var stopped = false
    }

    /// - Parameters:
    ///   - delay: how long the quiet must last.
    ///   - sleep: waits for a duration, throwing when cancelled (tests pass one they wake themselves).
    ///   - action: what to do then; runs on a background task.
    public init(
        after delay: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        action: @escaping @Sendable () -> Void
    ) {
        self.delay = delay
        self.sleep = sleep
        self.action = action
    }

    /// Whether a quiet stretch is being waited out.
    var isArmed: Bool { state.withLock { $0.timer != nil } }

    /// Answers counted so far.
    var pulseCount: UInt64 { answers.load(ordering: .relaxed) }

    /// A run began: no action until it has ended and the quiet has lasted.
    public func runBegan() {
        state.withLock { state in
            state.runsInFlight += 1
            disarm(&state)
        }
    }

    /// A run ended (each ``runBegan()`` is matched by exactly one of these).
    public func runEnded() {
        state.withLock { state in
            state.runsInFlight -= 1
            arm(&state)
        }
    }

    /// Something other than a run or a request happened (sites applied, a client's connection ended): the quiet
    /// starts again.
    public func activity() {
        news.add(1, ordering: .relaxed)
        if !armed.load(ordering: .relaxed) { state.withLock { arm(&$0) } }
    }

    /// A client's request was answered. Cheap enough for every request: while a timer runs, two atomic increments
    /// and one atomic load.
    public func pulse() {
        answers.add(1, ordering: .relaxed)
        activity()
    }

    /// No action from now on (shutdown).
    public func stop() {
        state.withLock { state in
            state.stopped = true
            disarm(&state)
        }
    }

    private func disarm(_ state: inout State) {
        state.generation &+= 1
        state.timer?.cancel()
        state.timer = nil
        armed.store(false, ordering: .relaxed)
    }

    /// Starts the timer unless one runs, a run is in flight or the watch has stopped.
    private func arm(_ state: inout State) {
        guard state.timer == nil, !state.stopped, state.runsInFlight == 0 else { return }
        state.generation &+= 1
        let generation = state.generation
        // Counted now, not when the task starts: a request after this postpones the action.
        let newsAtArming = news.load(ordering: .relaxed)
        state.timer = Task.detached(priority: .background) { [delay, sleep] in
            var seen = newsAtArming
            while true {
                do {
                    try await sleep(delay)
                } catch {
                    return
                }
                // News came during the wait: wait again from now.
                let now = self.news.load(ordering: .relaxed)
                if now == seen { break }
                seen = now
            }
            self.fire(generation)
        }
        armed.store(true, ordering: .relaxed)
    }

    private func fire(_ generation: UInt64) {
        let due = state.withLock { state in
            guard !state.stopped, state.generation == generation, state.runsInFlight == 0 else { return false }
            state.timer = nil
            armed.store(false, ordering: .relaxed)
            return true
        }
        if due { action() }
    }
}
