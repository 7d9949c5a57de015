import Foundation
import Hummingbird

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
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let app = try buildApplication(configuration: configuration, now: now, requestLog: requestLog, onServerRunning: onServerRunning)
        try await app.runService()
    }
}
