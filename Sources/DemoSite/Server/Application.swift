import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

extension DemoSite {
    /// Builds the demo site's Hummingbird application.
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
    ) throws(ConfigurationError) -> some ApplicationProtocol {
        let totpSecret = try configuration.validate()
        let site = SiteContext(configuration: configuration, totpSecret: totpSecret, now: now)
        return application(site: site, requestLog: requestLog, onServerRunning: onServerRunning)
    }

    /// The site's application and, with `--idp-host`, the identity provider's, sharing one state; each reports
    /// its bound port (the provider's through `onProviderRunning`).
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
            let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
            router.add(middleware: SiteMiddleware(site: site, log: requestLog))
            ProviderRoutes(site: site).register(on: router)
            ControlRoutes(site: site).register(on: router)
            services.append(Application(
                router: router,
                configuration: ApplicationConfiguration(
                    address: .hostname(providerHost, port: configuration.idpPort), serverName: "demo-site-idp"),
                onServerRunning: { channel in
                    let port = channel.localAddress?.port ?? configuration.idpPort
                    site.providerPort.withLock { $0 = port }
                    await onProviderRunning(port)
                }
            ))
        }
        return services
    }

    private static func application(
        site: SiteContext, requestLog: (@Sendable (RequestLogEntry) -> Void)?,
        onServerRunning: @escaping @Sendable (Int) async -> Void
    ) -> some ApplicationProtocol {
        let configuration = site.configuration
        return Application(
            router: buildRouter(site: site, requestLog: requestLog),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "demo-site"
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                site.boundPort.withLock { $0 = port }
                await onServerRunning(port)
            }
        )
    }

    static func buildRouter(site: SiteContext, requestLog: (@Sendable (RequestLogEntry) -> Void)?) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: SiteMiddleware(site: site, log: requestLog))
        LoginRoutes(site: site).register(on: router)
        CodeRoutes(site: site).register(on: router)
        JSONAPIRoutes(site: site).register(on: router)
        SSORoutes(site: site).register(on: router)
        OIDCRoutes(site: site).register(on: router)
        BrowserRoutes(site: site).register(on: router)
        SignedRoutes(site: site).register(on: router)
        ControlRoutes(site: site).register(on: router)
        return router
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
