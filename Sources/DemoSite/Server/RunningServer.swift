import Foundation
import Logging
import ServiceLifecycle

extension DemoSite {
    /// Why the server could not start; holds the address and the underlying error, never a credential.
    public struct StartError: Error, CustomStringConvertible {
        /// The address that was to be bound.
        public let host: String
        public let port: Int
        /// The error the system reported, e.g. "Address already in use".
        public let underlying: String

        public var description: String { "demo-site could not listen on \(host):\(port): \(underlying)" }
    }

    /// A demo site listening on a socket, as ``start(configuration:now:requestLog:)`` returns it.
    public final class RunningServer: Sendable {
        /// The bound address and port (the real one when port 0 was asked for).
        public let host: String
        public let port: Int
        /// The identity provider's address and port (`idpHost`), when it runs.
        public let providerHost: String?
        public let providerPort: Int?
        private let group: ServiceGroup
        private let task: Task<Void, any Error>

        fileprivate init(
            host: String, port: Int, providerHost: String?, providerPort: Int?, group: ServiceGroup, task: Task<Void, any Error>
        ) {
            self.host = host
            self.port = port
            self.providerHost = providerHost
            self.providerPort = providerPort
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

        /// `http://PROVIDER-HOST:PORT`, when the identity provider runs.
        public var providerURL: URL? {
            guard let providerHost, let providerPort else { return nil }
            return URL(string: "http://\(providerHost.contains(":") ? "[\(providerHost)]" : providerHost):\(providerPort)")
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
        // Each listener reports its port once: the site's as (false, port), the provider's as (true, port).
        let (ports, continuation) = AsyncStream.makeStream(of: (provider: Bool, port: Int).self)
        let services = try buildServices(
            configuration: configuration, now: now, requestLog: requestLog,
            onServerRunning: { port in continuation.yield((false, port)) },
            onProviderRunning: { port in continuation.yield((true, port)) })
        // No signal handling here: the process (a test runner, a benchmark) owns its signals.
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [], logger: Logger(label: "demo-site"))
        )
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var port: Int?
        var providerPort: Int?
        for await bound in ports {
            if bound.provider { providerPort = bound.port } else { port = bound.port }
            if port != nil && (configuration.idpHost == nil || providerPort != nil) { break }
        }
        guard let port, configuration.idpHost == nil || providerPort != nil else {
            // The stream ended without a port: a server stopped before listening.
            let reason: String
            switch await task.result {
            case .failure(let error): reason = String(describing: error)
            case .success: reason = "the server stopped before it listened"
            }
            await group.triggerGracefulShutdown()
            let failedHost = port == nil ? configuration.host : configuration.idpHost ?? configuration.host
            throw StartError(host: failedHost, port: port == nil ? configuration.port : configuration.idpPort, underlying: reason)
        }
        return RunningServer(
            host: configuration.host, port: port, providerHost: configuration.idpHost, providerPort: providerPort, group: group,
            task: task)
    }
}
