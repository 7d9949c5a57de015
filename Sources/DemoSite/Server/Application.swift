import Foundation
import HTTPServer
import Logging
import NIOPosix
import ServiceLifecycle

extension DemoSite {
    /// One listener of the demo site as a `Service`: it binds its address when it runs, reports the bound port,
    /// serves until graceful shutdown (or cancellation), then lets the requests in progress finish.
    public struct Listener: Service {
        /// The address it binds; port 0 for a free one.
        public let host: String
        public let port: Int
        let responder: SiteResponder
        let onRunning: @Sendable (Int) async -> Void

        public func run() async throws {
            let server = try await HTTPServer.start(
                address: .tcp(host: host, port: port), group: MultiThreadedEventLoopGroup.singleton,
                configuration: ServerConfiguration(requestDeadline: .seconds(30), idleTimeout: .seconds(60)), responder: responder)
            await onRunning(server.port ?? port)
            try? await gracefulShutdown()
            await server.shutdown()
        }

        /// The same site on `host`:`port`, telling `report` the bound port after what it reported before.
        public func listening(host: String, port: Int, then report: @escaping @Sendable (Int) async -> Void) -> Listener {
            let before = onRunning
            return Listener(host: host, port: port, responder: responder) { bound in
                await before(bound)
                await report(bound)
            }
        }
    }

    /// Builds the demo site's listener.
    ///
    /// - Parameters:
    ///   - configuration: validated here; an invalid one throws before anything is built.
    ///   - now: the wall clock for session expiry and TOTP.
    ///   - requestLog: called once per request with its method, path and status.
    ///   - onServerRunning: called with the bound port once the server listens.
    /// - Throws: ``ConfigurationError``.
    public static func buildApplication(
        configuration: Configuration,
        now: @escaping WallClock = { Date() },
        requestLog: (@Sendable (RequestLogEntry) -> Void)? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws(ConfigurationError) -> Listener {
        let totpSecret = try configuration.validate()
        let site = SiteContext(configuration: configuration, totpSecret: totpSecret, now: now)
        return application(site: site, requestLog: requestLog, onServerRunning: onServerRunning)
    }

    /// The site's listener and, with `--idp-host`, the identity provider's, sharing one state; each reports its
    /// bound port (the provider's through `onProviderRunning`).
    static func buildServices(
        configuration: Configuration,
        now: @escaping WallClock,
        requestLog: (@Sendable (RequestLogEntry) -> Void)?,
        onServerRunning: @escaping @Sendable (Int) async -> Void,
        onProviderRunning: @escaping @Sendable (Int) async -> Void
    ) throws(ConfigurationError) -> [any Service] {
        let totpSecret = try configuration.validate()
        let site = SiteContext(configuration: configuration, totpSecret: totpSecret, now: now)
        var services: [any Service] = [application(site: site, requestLog: requestLog, onServerRunning: onServerRunning)]
        if let providerHost = configuration.idpHost {
            let routes = RouteTable()
            ProviderRoutes(site: site).register(on: routes)
            ControlRoutes(site: site).register(on: routes)
            services.append(Listener(
                host: providerHost, port: configuration.idpPort, responder: SiteResponder(site: site, routes: routes, log: requestLog)
            ) { port in
                site.providerPort.withLock { $0 = port }
                await onProviderRunning(port)
            })
        }
        return services
    }

    private static func application(
        site: SiteContext, requestLog: (@Sendable (RequestLogEntry) -> Void)?,
        onServerRunning: @escaping @Sendable (Int) async -> Void
    ) -> Listener {
        let configuration = site.configuration
        return Listener(host: configuration.host, port: configuration.port, responder: SiteResponder(site: site, routes: buildRoutes(site: site), log: requestLog)) { port in
            site.boundPort.withLock { $0 = port }
            await onServerRunning(port)
        }
    }

    static func buildRoutes(site: SiteContext) -> RouteTable {
        let routes = RouteTable()
        LoginRoutes(site: site).register(on: routes)
        CodeRoutes(site: site).register(on: routes)
        JSONAPIRoutes(site: site).register(on: routes)
        SSORoutes(site: site).register(on: routes)
        OIDCRoutes(site: site).register(on: routes)
        BrowserRoutes(site: site).register(on: routes)
        SignedRoutes(site: site).register(on: routes)
        ControlRoutes(site: site).register(on: routes)
        return routes
    }
}

extension DemoSite {
    /// Runs the site in the foreground until SIGINT or SIGTERM, then shuts down gracefully (open
    /// requests finish). This is what the `demo-site` executable calls.
    /// - Throws: ``ConfigurationError``, or the error that stopped the server (for instance a port in use).
    public static func serve(
        configuration: Configuration,
        now: @escaping WallClock = { Date() },
        requestLog: (@Sendable (RequestLogEntry) -> Void)? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onProviderRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let services = try buildServices(
            configuration: configuration, now: now, requestLog: requestLog, onServerRunning: onServerRunning,
            onProviderRunning: onProviderRunning)
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "demo-site")))
        try await group.run()
    }
}
