import NIOCore
import NIOPosix
@testable import SocketAPI

/// Runs `body` with every job of its task on one thread, an event loop of its own: an `EmbeddedChannel` may only
/// be used on the thread that made it (NIO reports every other use as API misuse), and an async test otherwise
/// resumes on any thread of the pool after each `await`. Its own loop, not one shared by every such test, so
/// that no test waits behind another's long synchronous work.
func onOneEventLoop<T>(_ body: () async throws -> T) async throws -> T {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let result: Result<T, any Error>
    do {
        result = .success(try await withTaskExecutorPreference(EventLoopExecutor(group.next())) { try await body() })
    } catch {
        result = .failure(error)
    }
    try await group.shutdownGracefully()
    return try result.get()
}
