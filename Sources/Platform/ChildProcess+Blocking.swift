import Dispatch
import Locking

extension ChildProcess {
    /// ``run(standardErrorLine:)`` for a synchronous caller (opening the vault with a passphrase command):
    /// blocks the calling thread until the program ends, was stopped at its timeout, or failed to start.
    ///
    /// The run itself stays asynchronous and needs a thread of Swift's cooperative pool now and then, so
    /// the blocked caller must not hold the last free one: call this from the main thread, a thread of its
    /// own, or one task at a time (the CLI and the daemon open the vault once, at start-up).
    public func runBlocking(
        standardErrorLine: (@Sendable (String) -> Void)? = nil
    ) throws(ChildProcessError) -> ChildProcessResult {
        let outcome = BlockingOutcome()
        Task.detached {
            do throws(ChildProcessError) {
                outcome.deliver(.success(try await self.run(standardErrorLine: standardErrorLine)))
            } catch {
                outcome.deliver(.failure(error))
            }
        }
        return try outcome.wait().get()
    }
}

/// Hands a detached run's result to the thread waiting for it.
private final class BlockingOutcome: Sendable {
    private let ready = DispatchSemaphore(value: 0)
    private let result = Locked<Result<ChildProcessResult, ChildProcessError>?>(nil)

    func deliver(_ value: Result<ChildProcessResult, ChildProcessError>) {
        result.withLock { $0 = value }
        ready.signal()
    }

    func wait() -> Result<ChildProcessResult, ChildProcessError> {
        ready.wait()
        // deliver() stored the result before signalling.
        return result.withLock { $0 } ?? .failure(.failed(program: "(none)", reason: "no result delivered"))
    }
}
