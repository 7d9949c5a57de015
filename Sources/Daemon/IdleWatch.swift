import Locking

/// Runs an action once the daemon has been quiet for a while: no login, check or keepalive in flight, and none
/// begun or ended, no sites applied and no client connection ended, for ``delay``. The daemon gives back the
/// memory its code occupies then (``Platform/ResidentCode``): most of its code runs only during runs, and a
/// client's request touches a part of the rest.
///
/// Nothing polls: each piece of news re-arms one timer, and the action runs once per quiet stretch.
public final class IdleWatch: Sendable {
    public let delay: Duration
    private let action: @Sendable () -> Void
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state = Locked(State())

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

    /// A run began: no action until it has ended and the quiet has lasted.
    public func runBegan() {
        state.withLock { state in
            state.runsInFlight += 1
            state.generation &+= 1
            state.timer?.cancel()
            state.timer = nil
        }
    }

    /// A run ended (each ``runBegan()`` is matched by exactly one of these).
    public func runEnded() {
        state.withLock { state in
            state.runsInFlight -= 1
            arm(&state)
        }
    }

    /// Something other than a run happened (sites applied, a client's connection ended): the quiet starts again.
    public func activity() {
        state.withLock { arm(&$0) }
    }

    /// No action from now on (shutdown).
    public func stop() {
        state.withLock { state in
            state.stopped = true
            state.timer?.cancel()
            state.timer = nil
        }
    }

    private func arm(_ state: inout State) {
        guard !state.stopped, state.runsInFlight == 0 else { return }
        state.timer?.cancel()
        state.generation &+= 1
        let generation = state.generation
        state.timer = Task.detached(priority: .background) { [delay, sleep] in
            do {
                try await sleep(delay)
            } catch {
                return
            }
            self.fire(generation)
        }
    }

    private func fire(_ generation: UInt64) {
        let due = state.withLock { state in
            guard !state.stopped, state.generation == generation, state.runsInFlight == 0 else { return false }
            state.timer = nil
            return true
        }
        if due { action() }
    }
}
