import HTTPServer
import HTTPTypes

extension DemoSite {
    /// One handled request, for the request log. It holds the method, the path without its query (a query
    /// can carry an SSO ticket) and the status: never a header, cookie, body or credential.
    public struct RequestLogEntry: Sendable, CustomStringConvertible {
        /// ServerRequest method, e.g. "POST".
        public let method: String
        /// Path without the query string, e.g. "/login".
        public let path: String
        /// ServerResponse status code.
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

/// Answers every request of one listener: writes the request log line, counts the request, answers 503 while the
/// site is down (control routes excepted), keeps each host name to its own routes, then asks the route table (404
/// for a path it does not hold). Every answer waits for the site's state (an actor), so each is made in one task.
struct SiteResponder: HTTPResponder {
    static let controlPrefix = "/_control/"
    /// The one route the SSO host serves besides the control routes.
    static let ssoHostRoutes: Set<String> = ["/sso/authorize"]

    let site: SiteContext
    let routes: RouteTable
    let log: (@Sendable (DemoSite.RequestLogEntry) -> Void)?

    func respond(to request: ServerRequest) -> ServerReply {
        .later {
            let started = ContinuousClock.now
            let path = String(request.path)
            let response = await route(request, path: path)
            log?(DemoSite.RequestLogEntry(method: request.method.rawValue, path: path, status: response.status.code, duration: .now - started))
            return response
        }
    }

    private func route(_ request: ServerRequest, path: String) async -> ServerResponse {
        let notFound = Reply.html(Pages.message(title: "Not found", text: "No such page on this host."), status: .notFound)
        let handler = routes.handler(request.method, request.path)
        if path.hasPrefix(Self.controlPrefix) { return await handler?(request) ?? notFound }
        if await site.store.countRequest() {
            return Reply.html(Pages.message(title: "Service unavailable", text: "The site is down for maintenance."), status: .serviceUnavailable)
        }
        let servedHere =
            switch site.role(of: request) {
            case .sso: Self.ssoHostRoutes.contains(path)
            case .main: !Self.ssoHostRoutes.contains(path)
            }
        guard servedHere, let handler else { return notFound }
        return await handler(request)
    }
}
