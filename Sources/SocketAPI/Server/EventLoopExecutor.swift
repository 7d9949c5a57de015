import HummingbirdCore
import Logging
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

/// A child channel whose connection task prefers its own event loop as task executor
/// (``EventLoopExecutor``); setting the channel up is `Inner`'s, and then `completePipeline`'s.
struct EventLoopPinnedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    /// Runs on the connection's event loop once `inner` has set its pipeline up.
    let completePipeline: @Sendable (any Channel) throws -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try completePipeline(channel)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await inner.handle(value: value, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 as ``HTTPServerBuilder/http1(configuration:)`` serves it, each connection's task on its own event
    /// loop, with a ``CookieFastPath`` right after Hummingbird's connection-state handler (so that handler's idle
    /// timeout and graceful shutdown see the fast path's answers too).
    static func http1OnEventLoops(configuration: HTTP1Channel.Configuration, fastPath: CookieFastPathParts) -> HTTPServerBuilder {
        .init { responder in
            EventLoopPinnedChannel(inner: HTTP1Channel(responder: responder, configuration: configuration)) { channel in
                let operations = channel.pipeline.syncOperations
                let state = try operations.handler(type: HTTPConnectionStateHandler.self)
                try operations.addHandler(CookieFastPath(parts: fastPath), position: .after(state))
            }
        }
    }
}
