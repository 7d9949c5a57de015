import NIOCore

/// Runs a task's jobs on one NIO event loop: a connection's own loop, for the task that serves it.
///
/// Hummingbird serves each connection in a task on Swift's global executor, while the connection's reads and
/// writes happen on its event loop, so each request crossed between two threads twice (a futex wake and a
/// context switch each way, half of the daemon's CPU under load). With this executor preferred for the
/// connection's task, the task runs where its bytes arrive. Only short, non-blocking work may run here, which is
/// what the socket's routes do: anything slow (a login, a vault write) happens in the Keeper, off the loop.
final class EventLoopExecutor: TaskExecutor {
    private let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
