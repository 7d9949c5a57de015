import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// The identity provider (`--idp-host`), an OpenID Connect-style authorization server on a host of its own, as a
/// company's provider beside an internal app: its own sign-in form and session (cookies named as the app's,
/// `demo_session` and `demo_csrf`, as two Django apps have), a consent page the first time a user meets the app,
/// and single-use authorization codes sent back to the app's `/oidc/callback` with the app's `state`.
struct ProviderRoutes: Sendable {
    /// The one client the provider knows: the demo app.
    static let clientID = "demo-app"
    static let callbackPath = "/oidc/callback"

    let site: SiteContext

    func register(on router: RouteTable) {
        router.get("/") { request in await self.home(request) }
        router.get("/login") { request in self.loginPage(request) }
        router.post("/login") { request in await self.submitLogin(request) }
        router.get("/authorize") { request in await self.authorize(request) }
        router.post("/authorize") { request in await self.decide(request) }
    }

    /// What an authorization request asks, checked: the known client, a callback on the app's host, a state.
    struct Authorization {
        var redirectURI: String
        var state: String

        /// The query (or consent form) parameters back to `/authorize`.
        var query: String {
            "response_type=code&client_id=\(ProviderRoutes.clientID)&redirect_uri=\(SSORoutes.percentEncode(redirectURI))"
                + "&state=\(SSORoutes.percentEncode(state))"
        }
    }

    func authorization(_ parameters: [String: String]) -> Authorization? {
        guard parameters["response_type"] == "code", parameters["client_id"] == Self.clientID,
            let state = parameters["state"], !state.isEmpty, let redirect = parameters["redirect_uri"],
            let components = URLComponents(string: redirect), components.scheme?.lowercased() == "http",
            let host = components.host?.lowercased(),
            [site.configuration.host.lowercased(), site.configuration.mainHost.lowercased(), "localhost"].contains(host),
            components.path == Self.callbackPath
        else { return nil }
        return Authorization(redirectURI: redirect, state: state)
    }

    func home(_ request: ServerRequest) async -> ServerResponse {
        guard let user = await site.store.providerSession(id: request.cookie(SiteCookie.session)) else {
            return Reply.redirect(.found, to: "/login")
        }
        return Reply.html(Pages.message(title: "Identity provider", text: "Signed in to the identity provider as \(user)"))
    }

    func loginPage(_ request: ServerRequest) -> ServerResponse {
        loginForm(next: SiteContext.safeNext(request.queryParameter("next")), error: nil)
    }

    func submitLogin(_ request: ServerRequest) async -> ServerResponse {
        let fields: [String: String]
        switch await site.csrfCheckedForm(request) {
        case .success(let posted): fields = posted
        case .failure(let refusal): return refusal.response
        }
        let next = SiteContext.safeNext(fields["next"])
        guard site.credentialsMatch(user: fields["username"] ?? "", password: fields["password"] ?? "") else {
            await site.store.recordFailedLogin()
            return loginForm(next: next, error: "Invalid username or password")
        }
        let maxAge = site.configuration.sessionMaxAge
        let id = await site.store.createProviderSession(user: site.configuration.user, maxAge: maxAge)
        return Reply.redirect(.seeOther, to: next ?? "/", cookies: [SiteCookie.session(id, maxAge: maxAge)])
    }

    /// Signs in first (the form, back here after), asks consent the first time, then sends the code back.
    func authorize(_ request: ServerRequest) async -> ServerResponse {
        var parameters: [String: String] = [:]
        for (name, value) in request.queryParameters { parameters[name] = value }
        guard let authorization = authorization(parameters) else { return Self.badRequest }
        guard let user = await site.store.providerSession(id: request.cookie(SiteCookie.session)) else {
            return Reply.redirect(.found, to: "/login?next=" + SSORoutes.percentEncode("/authorize?" + authorization.query))
        }
        guard await site.store.hasConsent(user: user, client: Self.clientID) else {
            let csrf = site.csrf.issue()
            return Reply.html(Pages.consent(csrf: csrf, client: Self.clientID, user: user, authorization: authorization), cookies: [SiteCookie.csrf(csrf)])
        }
        return await redirectWithCode(user: user, authorization)
    }

    /// The consent form's answer: `allow` gives consent (remembered) and a code; anything else `access_denied`.
    func decide(_ request: ServerRequest) async -> ServerResponse {
        let fields: [String: String]
        switch await site.csrfCheckedForm(request) {
        case .success(let posted): fields = posted
        case .failure(let refusal): return refusal.response
        }
        guard let authorization = authorization(fields) else { return Self.badRequest }
        guard let user = await site.store.providerSession(id: request.cookie(SiteCookie.session)) else {
            return Reply.redirect(.seeOther, to: "/login?next=" + SSORoutes.percentEncode("/authorize?" + authorization.query))
        }
        guard fields["allow"] != nil else {
            return Reply.redirect(
                .found, to: authorization.redirectURI + "?error=access_denied&state=" + SSORoutes.percentEncode(authorization.state))
        }
        await site.store.giveConsent(user: user, client: Self.clientID)
        return await redirectWithCode(user: user, authorization)
    }

    private func redirectWithCode(user: String, _ authorization: Authorization) async -> ServerResponse {
        let code = await site.store.issueCode(user: user, redirectURI: authorization.redirectURI)
        return Reply.redirect(
            .found,
            to: authorization.redirectURI + "?code=\(code)&state=" + SSORoutes.percentEncode(authorization.state))
    }

    private func loginForm(next: String?, error: String?) -> ServerResponse {
        let csrf = site.csrf.issue()
        return Reply.html(Pages.login(csrf: csrf, next: next, error: error), cookies: [SiteCookie.csrf(csrf)])
    }

    static let badRequest = Reply.html(
        Pages.message(
            title: "Bad request",
            text: "an authorization needs response_type=code, client_id=\(clientID), a state, and a redirect_uri on the app's host ending \(callbackPath)"),
        status: .badRequest)
}

/// The app's side of the sign-in through the identity provider: `/oidc/start` sends the browser to the
/// provider with a fresh `state` (kept against the `demo_oidc` cookie), `/oidc/callback` checks the state and
/// redeems the code, then opens a session of the app's own (`demo_session` on the app's host).
struct OIDCRoutes: Sendable {
    static let pendingCookie = "demo_oidc"

    let site: SiteContext

    func register(on router: RouteTable) {
        router.get("/oidc/start") { request in await self.start(request) }
        router.get(ProviderRoutes.callbackPath) { request in await self.callback(request) }
    }

    /// `http://HOST:PORT/oidc/callback` as the request reached the app.
    func redirectURI(_ request: ServerRequest) -> String {
        let host = site.host(of: request)
        return "http://\(host.name):\(host.port ?? site.publicPort(for: request))\(ProviderRoutes.callbackPath)"
    }

    func start(_ request: ServerRequest) async -> ServerResponse {
        guard let providerHost = site.configuration.idpHost, let port = site.providerPort.withLock({ $0 }) else {
            return Reply.html(Pages.message(title: "Not found", text: "This demo site runs no identity provider (--idp-host)."), status: .notFound)
        }
        let (cookie, state) = await site.store.startAppSignIn()
        let authorization = ProviderRoutes.Authorization(redirectURI: redirectURI(request), state: state)
        return Reply.redirect(
            .found, to: "http://\(providerHost):\(port)/authorize?\(authorization.query)",
            cookies: ["\(Self.pendingCookie)=\(cookie); Path=/; HttpOnly; SameSite=Lax"])
    }

    func callback(_ request: ServerRequest) async -> ServerResponse {
        guard await site.store.finishAppSignIn(cookie: request.cookie(Self.pendingCookie), state: request.queryParameter("state")) else {
            await site.store.recordFailedLogin()
            return Reply.html(Pages.message(title: "Forbidden", text: "Invalid or missing state"), status: .forbidden)
        }
        guard let code = request.queryParameter("code"), let user = await site.store.redeemCode(code, redirectURI: redirectURI(request)) else {
            await site.store.recordFailedLogin()
            return Reply.html(Pages.message(title: "Forbidden", text: "Invalid or expired authorization code"), status: .forbidden)
        }
        let maxAge = site.configuration.sessionMaxAge
        let session = await site.store.createSession(user: user, maxAge: maxAge)
        return Reply.redirect(
            .seeOther, to: "/account",
            cookies: [SiteCookie.session(session.id, maxAge: maxAge), SiteCookie.expired(Self.pendingCookie, sameSite: "Lax")])
    }
}
