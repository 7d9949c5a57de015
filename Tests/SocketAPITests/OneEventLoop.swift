import NIOCore
import NIOPosix
@testable import SocketAPI

/// The loop the tests of embedded pipelines run on (``onOneEventLoop(_:)``). Never shut down: it lives as long as
/// the test process.
private let embeddedTestLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

/// Runs `body` with every job of its task on one thread: an `EmbeddedChannel` may only be used on the thread that
/// made it (NIO reports every other use as API misuse), and an async test otherwise resumes on any thread of the
/// pool after each `await`. Only for bodies that never block: the thread is shared by every such test.
func onOneEventLoop<T>(_ body: () async throws -> T) async throws -> T {
    try await withTaskExecutorPreference(EventLoopExecutor(embeddedTestLoops.next())) {
        try await body()
    }
}
