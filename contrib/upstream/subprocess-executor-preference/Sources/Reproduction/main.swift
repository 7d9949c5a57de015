import Dispatch
import Foundation
import Subprocess
import Synchronization

// A task executor on a thread of its own: every job of a task that prefers it runs there.
final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "own-thread")
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

let executor = OwnThreadExecutor()
let started = ContinuousClock.now
let done = DispatchSemaphore(value: 0)
let took = Mutex<Duration>(.zero)

// 1. A run of /bin/true, entirely under the executor preference.
Task.detached(executorPreference: executor) {
    _ = try await Subprocess.run(.path("/bin/true"), output: .discarded)
    took.withLock { $0 = ContinuousClock.now - started }
    done.signal()
}
// 2. Every thread of the cooperative pool blocked for 3 s, as blocking work on it would.
let blockers = (0...ProcessInfo.processInfo.activeProcessorCount).map { _ in Task.detached { usleep(3_000_000) } }
done.wait()
_ = blockers
// Expected: a few milliseconds (nothing the run does needs the pool). Seen: 3 s or more.
print("Subprocess.run under a task executor preference returned after \(took.withLock { $0 })")
