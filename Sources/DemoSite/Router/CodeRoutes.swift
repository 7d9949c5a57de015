import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// A sign-in whose second factor is a one-time code sent out of band (a text message): `POST /login/code`
/// checks the password and "sends" a six-digit code, which `GET /_control/sent-code` shows as the person's
/// phone would; `POST /login/code/verify` takes it once and signs the user in. A site file answers it with a
/// `prompt` step (SPEC section 12).
struct CodeRoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.post("/login/code") { request in await self.sendCode(request) }
        router.post("/login/code/verify") { request in await self.verifyCode(request) }
        router.get("/_control/sent-code") { _ in
            guard let code = await self.site.store.lastSentCode() else { return Reply.error(.notFound, "no code was sent") }
            return Reply.json(["code": code])
        }
    }

    func sendCode(_ request: ServerRequest) async -> ServerResponse {
        let fields: [String: String]
        do {
            fields = RequestBodyReader.formFields(try await RequestBodyReader.collect(request))
        } catch {
            return Reply.text(.contentTooLarge, "ServerRequest body too large")
        }
        guard site.credentialsMatch(user: fields["username"] ?? "", password: fields["password"] ?? "") else {
            await site.store.recordFailedLogin()
            return Reply.html(Pages.message(title: "Sign in", text: "Invalid username or password"), status: .unauthorized)
        }
        let pendingID = await site.store.createPendingLogin(user: site.configuration.user)
        await site.store.sendCode(String(format: "%06d", UInt32.random(in: 0..<1_000_000)), pendingID: pendingID)
        return Reply.html(
            Pages.message(title: "Code sent", text: "A code was sent to the phone ending 42"), cookies: [SiteCookie.pending(pendingID)])
    }

    func verifyCode(_ request: ServerRequest) async -> ServerResponse {
        guard let pendingID = request.cookie(SiteCookie.pending), await site.store.pendingLogin(id: pendingID) != nil else {
            return Reply.html(Pages.message(title: "Sign in", text: "Sign in again"), status: .unauthorized)
        }
        let fields: [String: String]
        do {
            fields = RequestBodyReader.formFields(try await RequestBodyReader.collect(request))
        } catch {
            return Reply.text(.contentTooLarge, "ServerRequest body too large")
        }
        guard await site.store.takeCode(fields["code"] ?? "", pendingID: pendingID) else {
            _ = await site.store.recordFailedCode(pendingID: pendingID)
            return Reply.html(Pages.message(title: "Sign in", text: "Invalid code"), status: .unauthorized)
        }
        await site.store.completePendingLogin(id: pendingID)
        let session = await site.store.createSession(user: site.configuration.user, maxAge: site.configuration.sessionMaxAge)
        return Reply.redirect(
            .seeOther, to: "/account",
            cookies: [
                SiteCookie.session(session.id, maxAge: site.configuration.sessionMaxAge),
                SiteCookie.expired(SiteCookie.pending, sameSite: nil),
            ])
    }
}
