import Hummingbird

extension DemoSite {
    /// One handled request, for the request log. It holds the method, the path without its query (a query
    /// can carry an SSO ticket) and the status: never a header, cookie, body or credential.
    public struct RequestLogEntry: Sendable, CustomStringConvertible {
        /// Request method, e.g. "POST".
        public let method: String
        /// Path without the query string, e.g. "/login".
        public let path: String
        /// Response status code.
        public let status: Int
        /// Time from receiving the request head to having the response.
        public let duration: Duration

        /// "POST /login 303 0.42 ms"
        public var description: String {
            let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
            return "\(method) \(path) \(status) \((milliseconds * 100).rounded() / 100) ms"
        }
    }
}

/// Runs first for every request: writes the request log line, counts the request, answers 503 while the
/// site is down (control routes excepted), and keeps each host name to its own routes.
struct SiteMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    static let controlPrefix = "/_control/"
    /// The one route the SSO host serves besides the control routes.
    static let ssoHostRoutes: Set<String> = ["/sso/authorize"]

    let site: SiteContext
    let log: (@Sendable (DemoSite.RequestLogEntry) -> Void)?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        do {
            let response = try await route(request, path: path, context: context, next: next)
            record(request, path: path, status: response.status.code, since: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? HTTPResponse.Status.internalServerError.code
            record(request, path: path, status: status, since: started)
            throw error
        }
    }

    private func route(
        _ request: Request,
        path: String,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if path.hasPrefix(Self.controlPrefix) { return try await next(request, context) }
        if await site.store.countRequest() {
            return Reply.html(Pages.message(title: "Service unavailable", text: "The site is down for maintenance."), status: .serviceUnavailable)
        }
        let servedHere =
            switch site.role(of: request) {
            case .sso: Self.ssoHostRoutes.contains(path)
            case .main: !Self.ssoHostRoutes.contains(path)
            }
        guard servedHere else {
            return Reply.html(Pages.message(title: "Not found", text: "No such page on this host."), status: .notFound)
        }
        return try await next(request, context)
    }

    private func record(_ request: Request, path: String, status: Int, since started: ContinuousClock.Instant) {
        log?(DemoSite.RequestLogEntry(method: request.method.rawValue, path: path, status: status, duration: .now - started))
    }
}
