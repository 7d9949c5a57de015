import Foundation

/// Runs `body` on a new Foundation `Thread` and suspends the calling task until it returns.
///
/// Swift's cooperative thread pool has one thread per core (two on the CI machine). A test that blocks
/// a pool thread (waiting for a child process, polling with sleeps, reading a pipe to its end) stalls
/// every other test and every continuation waiting for a free pool thread, so timing assertions in
/// unrelated tests fail. Blocking work in tests goes through here instead.
///
/// Return what the test needs from `body` and check it afterwards on the test's own task: Swift
/// Testing's `#expect` and `#require` belong to the test's task, not to this thread. Errors thrown
/// by `body` are rethrown unchanged; a non-throwing `body` makes this call non-throwing.
public func onDedicatedThread<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
    let result: Result<T, Failure> = await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: Result { () throws(Failure) -> T in try body() })
        }
        thread.name = "test blocking work"
        thread.start()
    }
    return try result.get()
}
