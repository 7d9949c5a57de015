import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// A redirect chain across two host names, like a single-sign-on login:
/// main `/sso/start` → SSO `/sso/authorize` (sets `sso_id` there) → main `/sso/callback?ticket=T`
/// (sets `demo_session`) → `/account`. The SSO host remembers the configured user, so it approves at once.
struct SSORoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.get("/sso/start") { request in self.start(request) }
        router.get("/sso/authorize") { request in await self.authorize(request) }
        router.get("/sso/callback") { request in await self.callback(request) }
    }

    func start(_ request: ServerRequest) -> ServerResponse {
        let port = site.publicPort(for: request)
        let callback = "http://\(site.configuration.mainHost):\(port)/sso/callback"
        let location = "http://\(site.configuration.ssoHost):\(port)/sso/authorize?return=\(Self.percentEncode(callback))"
        return Reply.redirect(.found, to: location)
    }

    /// Only a callback URL on the main host is accepted as `return`, so the SSO host is no open redirect.
    func authorize(_ request: ServerRequest) async -> ServerResponse {
        guard let returnValue = request.queryParameter("return"), let returnURL = URLComponents(string: returnValue),
            returnURL.scheme?.lowercased() == "http", returnURL.host?.lowercased() == site.configuration.mainHost.lowercased(),
            returnURL.path == "/sso/callback"
        else {
            return Reply.html(
                Pages.message(title: "Bad request", text: "return must be http://\(site.configuration.mainHost):PORT/sso/callback"),
                status: .badRequest
            )
        }
        let ssoID = await site.store.ssoIdentity(
            existing: request.cookie(SiteCookie.ssoID),
            user: site.configuration.user,
            lifetime: site.configuration.sessionMaxAge
        )
        guard let ticket = await site.store.issueTicket(ssoID: ssoID) else {
            return Reply.html(Pages.message(title: "Error", text: "SSO identity vanished"), status: .internalServerError)
        }
        var target = returnURL
        target.queryItems = (returnURL.queryItems ?? []) + [URLQueryItem(name: "ticket", value: ticket)]
        return Reply.redirect(.found, to: target.string ?? returnValue, cookies: [SiteCookie.ssoID(ssoID)])
    }

    func callback(_ request: ServerRequest) async -> ServerResponse {
        guard let ticket = request.queryParameter("ticket"), let user = await site.store.redeemTicket(ticket) else {
            await site.store.recordFailedLogin()
            return Reply.html(Pages.message(title: "Forbidden", text: "Invalid or expired SSO ticket"), status: .forbidden)
        }
        let maxAge = site.configuration.sessionMaxAge
        let session = await site.store.createSession(user: user, maxAge: maxAge)
        return Reply.redirect(.seeOther, to: "/account", cookies: [SiteCookie.session(session.id, maxAge: maxAge)])
    }

    /// RFC 3986 2.3: everything but unreserved characters is percent-encoded in a query value.
    static func percentEncode(_ value: String) -> String {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }
}
