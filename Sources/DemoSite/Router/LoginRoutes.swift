import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// The browser-facing routes: sign-in form, second factor, account page, ping, logout.
struct LoginRoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.get("/login") { request in await self.loginPage(request) }
        router.post("/login") { request in await self.submitLogin(request) }
        router.get("/login/totp") { request in await self.totpPage(request) }
        router.post("/login/totp") { request in await self.submitTOTP(request) }
        router.get("/account") { request in await self.account(request) }
        router.get("/ping") { request in await self.ping(request) }
        router.post("/logout") { request in await self.logout(request) }
    }

    func loginPage(_ request: ServerRequest) async -> ServerResponse {
        let next = SiteContext.safeNext(request.queryParameter("next"))
        return loginForm(next: next, error: nil)
    }

    /// CSRF first (a forged post learns nothing about the credentials), then the password, then the
    /// second factor when it is on.
    func submitLogin(_ request: ServerRequest) async -> ServerResponse {
        let fields: [String: String]
        switch await site.csrfCheckedForm(request) {
        case .success(let posted): fields = posted
        case .failure(let refusal): return refusal.response
        }
        let next = SiteContext.safeNext(fields["next"])
        let user = fields["username"] ?? ""
        guard site.credentialsMatch(user: user, password: fields["password"] ?? "") else {
            await site.store.recordFailedLogin()
            return loginForm(next: next, error: "Invalid username or password")
        }
        if site.totp != nil {
            let pendingID = await site.store.createPendingLogin(user: site.configuration.user)
            return Reply.redirect(.seeOther, to: "/login/totp", cookies: [SiteCookie.pending(pendingID)])
        }
        let session = await site.store.createSession(user: site.configuration.user, maxAge: site.configuration.sessionMaxAge)
        return Reply.redirect(
            .seeOther,
            to: next ?? "/account",
            cookies: [SiteCookie.session(session.id, maxAge: site.configuration.sessionMaxAge)]
        )
    }

    func totpPage(_ request: ServerRequest) async -> ServerResponse {
        guard site.totp != nil, await pendingLogin(of: request) != nil else {
            return Reply.redirect(.seeOther, to: "/login")
        }
        return totpForm(error: nil)
    }

    func submitTOTP(_ request: ServerRequest) async -> ServerResponse {
        guard let totp = site.totp, let (pendingID, _) = await pendingLogin(of: request) else {
            return Reply.redirect(.seeOther, to: "/login", cookies: [SiteCookie.expired(SiteCookie.pending, sameSite: nil)])
        }
        let fields: [String: String]
        switch await site.csrfCheckedForm(request) {
        case .success(let posted): fields = posted
        case .failure(let refusal): return refusal.response
        }
        let step = totp.matchingStep(fields["code"] ?? "", at: site.now())
        let accepted: Bool
        if let step {
            accepted = await site.store.acceptTOTPStep(step, rejectReplay: site.configuration.totpRejectReplay)
        } else {
            accepted = false
        }
        guard accepted else {
            guard await site.store.recordFailedCode(pendingID: pendingID) else {
                // Too many wrong codes: the password must be entered again.
                return Reply.redirect(.seeOther, to: "/login", cookies: [SiteCookie.expired(SiteCookie.pending, sameSite: nil)])
            }
            return totpForm(error: step == nil ? "Invalid code" : "Invalid code: this code was already used, wait for the next one")
        }
        await site.store.completePendingLogin(id: pendingID)
        let session = await site.store.createSession(user: site.configuration.user, maxAge: site.configuration.sessionMaxAge)
        return Reply.redirect(
            .seeOther,
            to: "/account",
            cookies: [
                SiteCookie.session(session.id, maxAge: site.configuration.sessionMaxAge),
                SiteCookie.expired(SiteCookie.pending, sameSite: nil),
            ]
        )
    }

    func account(_ request: ServerRequest) async -> ServerResponse {
        guard let session = await site.session(of: request) else {
            return Reply.redirect(.found, to: "/login?next=/account")
        }
        return Reply.html(Pages.account(user: session.user, expiresAt: RFC3339.string(from: session.expires)))
    }

    /// Keep-alive: 204 for a live session; with sliding sessions it also restarts the session's Max-Age
    /// and sends the cookie again so the browser's copy lives as long.
    func ping(_ request: ServerRequest) async -> ServerResponse {
        guard let session = await site.session(of: request) else { return Reply.error(.unauthorized, "not logged in") }
        guard site.configuration.sliding, await site.store.extend(id: session.id, maxAge: site.configuration.sessionMaxAge) != nil else {
            return Reply.noContent()
        }
        return Reply.noContent(cookies: [SiteCookie.session(session.id, maxAge: site.configuration.sessionMaxAge)])
    }

    func logout(_ request: ServerRequest) async -> ServerResponse {
        if let session = await site.session(of: request) { await site.store.revoke(id: session.id) }
        return Reply.redirect(.seeOther, to: "/login", cookies: [SiteCookie.expired(SiteCookie.session, sameSite: "Lax")])
    }

    private func loginForm(next: String?, error: String?) -> ServerResponse {
        let token = site.csrf.issue()
        return Reply.html(
            Pages.login(csrf: token, next: next, error: error, padding: site.loginPagePadding), cookies: [SiteCookie.csrf(token)])
    }

    private func totpForm(error: String?) -> ServerResponse {
        let token = site.csrf.issue()
        return Reply.html(Pages.totp(csrf: token, error: error), cookies: [SiteCookie.csrf(token)])
    }

    private func pendingLogin(of request: ServerRequest) async -> (String, PendingLogin)? {
        guard let id = request.cookie(SiteCookie.pending), !id.isEmpty,
            let login = await site.store.pendingLogin(id: id)
        else { return nil }
        return (id, login)
    }
}
