import Locking

/// Why a database call did not answer in time.
struct DeadlineExceeded: Error {
    let limit: Duration
}

/// Runs `body` and returns its result, or throws ``DeadlineExceeded`` once `limit` passes, whichever
/// comes first; cancelling the caller cancels `body`.
///
/// A task group cannot give this: it waits for every child, and a statement sent on a connection whose
/// peer vanished (a cut network) neither answers nor reacts to cancellation until TCP gives up, many
/// minutes later. Here the work runs in a task of its own that the caller stops waiting for; it is
/// cancelled, and ends whenever postgres-nio lets it.
///
/// - Parameter discardLate: given what `body` returned when nobody waits for it any more (the deadline
///   passed or the caller was cancelled first): a value that must be released, a connection to close.
func withDeadline<T: Sendable>(
    _ limit: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void,
    discardLate: (@Sendable (T) async -> Void)? = nil,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = Locked<(continuation: CheckedContinuation<T, any Error>?, done: Bool)>((nil, false))
    let tasks = Locked<[Task<Void, Never>]>([])
    /// Hands `result` to the caller; false when it no longer waits.
    @Sendable @discardableResult func finish(_ result: Result<T, any Error>) -> Bool {
        let continuation = outcome.withLock { state -> CheckedContinuation<T, any Error>? in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return state.continuation
        }
        guard let continuation else { return false }
        for task in tasks.withLock({ $0 }) { task.cancel() }
        continuation.resume(with: result)
        return true
    }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            let alreadyDone = outcome.withLock { state -> Bool in
                state.continuation = continuation
                return state.done
            }
            if alreadyDone {
                continuation.resume(throwing: CancellationError())
                return
            }
            let work = Task {
                let value: T
                do { value = try await body() } catch {
                    finish(.failure(error))
                    return
                }
                if !finish(.success(value)) { await discardLate?(value) }
            }
            let timer = Task {
                do {
                    try await sleep(limit)
                    finish(.failure(DeadlineExceeded(limit: limit)))
                } catch {}
            }
            tasks.withLock { $0 = [work, timer] }
            // finish may have run before the tasks were recorded.
            if outcome.withLock({ $0.done }) { work.cancel(); timer.cancel() }
        }
    } onCancel: {
        let resumeNow = outcome.withLock { state -> Bool in
            if state.done { return false }
            // Not waiting yet: the continuation, once installed, finds the call done and throws.
            if state.continuation == nil {
                state.done = true
                return false
            }
            return true
        }
        if resumeNow { finish(.failure(CancellationError())) }
    }
}
