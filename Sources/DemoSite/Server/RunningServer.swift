import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

extension DemoSite {
    /// Why the server could not start; holds the address and the underlying error, never a credential.
    public struct StartError: Error, CustomStringConvertible {
        /// The address that was to be bound.
        public let host: String
        public let port: Int
        /// The error Hummingbird or the system reported, e.g. "Address already in use".
        public let underlying: String

        public var description: String { "demo-site could not listen on \(host):\(port): \(underlying)" }
    }

    /// A demo site listening on a socket, as ``start(configuration:now:requestLog:)`` returns it.
    public final class RunningServer: Sendable {
        /// The bound address and port (the real one when port 0 was asked for).
        public let host: String
        public let port: Int
        private let group: ServiceGroup
        private let task: Task<Void, any Error>

        fileprivate init(host: String, port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
            self.host = host
            self.port = port
            self.group = group
            self.task = task
        }

        /// `http://HOST:PORT` (an IPv6 address in brackets), for requests by address.
        public var baseURL: URL {
            var components = URLComponents()
            components.scheme = "http"
            components.host = host.contains(":") ? "[\(host)]" : host
            components.port = port
            guard let url = components.url else {
                preconditionFailure("http://\(host):\(port) is not a URL, yet the server bound that address")
            }
            return url
        }

        /// Stops listening, lets requests in progress finish, closes the connections, and returns when
        /// the server has stopped. Calling it again is harmless.
        public func stop() async {
            await group.triggerGracefulShutdown()
            _ = await task.result
        }

        deinit {
            task.cancel()
        }
    }

    /// Starts the site and returns once it listens; pass port 0 in `configuration` for a free port.
    /// - Throws: ``ConfigurationError`` for a bad configuration, ``StartError`` when binding fails.
    public static func start(
        configuration: Configuration,
        now: @escaping WallClock = { Date() },
        requestLog: (@Sendable (RequestLogEntry) -> Void)? = nil
    ) async throws -> RunningServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = try buildApplication(configuration: configuration, now: now, requestLog: requestLog) { port in
            continuation.yield(port)
            continuation.finish()
        }
        // No signal handling here: the process (a test runner, a benchmark) owns its signals.
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "demo-site"))
        )
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        guard let port = await ports.first(where: { _ in true }) else {
            // The stream ended without a port: the server stopped before listening.
            let reason: String
            switch await task.result {
            case .failure(let error): reason = String(describing: error)
            case .success: reason = "the server stopped before it listened"
            }
            throw StartError(host: configuration.host, port: configuration.port, underlying: reason)
        }
        return RunningServer(host: configuration.host, port: port, group: group, task: task)
    }
}
