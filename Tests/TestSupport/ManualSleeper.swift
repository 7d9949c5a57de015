import Locking

/// Sleeps that last until ``wakeAll()``; a cancelled one throws at once. For code that takes its sleep as a
/// parameter (`IdleWatch`), so a test decides when time has passed.
public final class ManualSleeper: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var pending: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var cancelledEarly: Set<UInt64> = []
    }
    private let state = Locked(State())

    public init() {}

    /// Sleeps waiting now.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    public func sleep(_ duration: Duration) async throws {
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

    /// Ends every sleep waiting now.
    public func wakeAll() {
        let all = state.withLock { state in
            defer { state.pending = [:] }
            return state.pending
        }
        for continuation in all.values { continuation.resume() }
    }
}
