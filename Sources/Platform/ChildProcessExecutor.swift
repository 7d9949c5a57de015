#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CLinux

/// The one thread on which every child process is watched: its spawn's bookkeeping, its pipes' reads, the
/// notice of its exit and the race with its timeout all run here, as jobs of tasks that prefer this executor.
///
/// Why a thread of its own: swift-subprocess resumes a run's continuations from its own threads (one waits for
/// exits on pidfds, one for pipe readiness), and a run of one short program takes some two dozen such resumptions
/// and task switches before it returns. On Swift's cooperative pool (one thread per core) each of them waits its
/// turn behind whatever else the process runs there; with both cores busy that added 25–90 ms per child in the
/// stress test (ChildExitLatencyTests), and in a loaded test process, seconds: long enough for a child's timeout
/// to win the race against its exit, which had long been seen. Here the whole run is a few microseconds of work on
/// a thread that does nothing else, and the caller's task is resumed once, with the result.
///
/// Only short, non-blocking work runs on this thread: swift-subprocess's and ``ChildProcess``'s own, and the
/// callbacks a caller hands to a run (standard error lines), which must return quickly.
final class ChildProcessExecutor: TaskExecutor, @unchecked Sendable {
    /// The process's one watcher thread, started on first use.
    static let shared = ChildProcessExecutor(name: "sk-children")

    /// Jobs waiting for the thread, in the order they came; guarded by `mutex`.
    private var jobs: [UnownedJob] = []
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let jobsQueued: UnsafeMutablePointer<pthread_cond_t>

    private init(name: String) {
        mutex = .allocate(capacity: 1)
        jobsQueued = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(jobsQueued, nil)
        let context = Unmanaged.passRetained(ThreadStart(executor: self, name: name)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
            // Named for thread dumps (`/proc/PID/task/*/comm`, gdb, perf): at most 15 bytes on Linux.
            _ = clinux_set_thread_name(start.name)
            start.executor.runJobs()
            return nil
        }, context)
        // Without its thread no child could be watched; a process that cannot start one thread cannot go on.
        precondition(started == 0, "could not start the child-process thread: \(String(cString: strerror(started)))")
        pthread_detach(thread)
    }

    private final class ThreadStart {
        let executor: ChildProcessExecutor
        let name: String
        init(executor: ChildProcessExecutor, name: String) {
            self.executor = executor
            self.name = name
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_mutex_unlock(mutex)
        pthread_cond_signal(jobsQueued)
    }

    /// The thread's loop: takes every queued job at once and runs them in order, then sleeps until more come.
    private func runJobs() -> Never {
        var batch: [UnownedJob] = []
        while true {
            pthread_mutex_lock(mutex)
            while jobs.isEmpty { pthread_cond_wait(jobsQueued, mutex) }
            swap(&batch, &jobs)
            pthread_mutex_unlock(mutex)
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
