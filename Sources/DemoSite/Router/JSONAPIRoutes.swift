import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// The JSON API: `POST /api/login`, `GET /api/me` and `GET /api/rotate`.
struct JSONAPIRoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.post("/api/login") { request in await self.login(request) }
        router.get("/api/me") { request in await self.me(request) }
        router.get("/api/rotate") { request in await self.rotate(request) }
    }

    /// A JSON login: no CSRF token (a cross-site form cannot send a JSON body), the TOTP code in `code`
    /// when the second factor is on. The session id is both the cookie and the bearer `token`.
    func login(_ request: ServerRequest) async -> ServerResponse {
        let body: ByteBuffer
        do {
            body = try await RequestBodyReader.collect(request)
        } catch {
            return Reply.error(.contentTooLarge, "request body too large")
        }
        guard let credentials = try? JSONDecoder().decode(APILoginRequest.self, from: Data(buffer: body)) else {
            return Reply.error(.badRequest, "body must be a JSON object with string fields username and password")
        }
        guard site.credentialsMatch(user: credentials.username, password: credentials.password) else {
            await site.store.recordFailedLogin()
            return Reply.error(.unauthorized, "invalid username or password")
        }
        if let totp = site.totp {
            guard let code = credentials.code else { return Reply.error(.unauthorized, "totp code required") }
            guard let step = totp.matchingStep(code, at: site.now()) else {
                await site.store.recordFailedLogin()
                return Reply.error(.unauthorized, "invalid totp code")
            }
            guard await site.store.acceptTOTPStep(step, rejectReplay: site.configuration.totpRejectReplay) else {
                return Reply.error(.unauthorized, "totp code already used")
            }
        }
        let maxAge = site.configuration.sessionMaxAge
        let session = await site.store.createSession(user: site.configuration.user, maxAge: maxAge)
        return Reply.json(
            APILoginResponse(token: session.id, user: UserInfo(name: session.user)),
            cookies: [SiteCookie.session(session.id, maxAge: maxAge)]
        )
    }

    func me(_ request: ServerRequest) async -> ServerResponse {
        guard let session = await site.session(of: request) else { return Reply.error(.unauthorized, "not logged in") }
        return Reply.json(MeResponse(user: UserInfo(name: session.user), expiresAt: RFC3339.string(from: session.expires)))
    }

    /// `/api/me` of a site that rotates its session cookie on use: the session gets a new id (the old one stops
    /// working at once) and the answer sends it in `demo_session`, whose Max-Age is the session's remaining life.
    func rotate(_ request: ServerRequest) async -> ServerResponse {
        guard let session = await site.session(of: request), let renewed = await site.store.rotate(id: session.id) else {
            return Reply.error(.unauthorized, "not logged in")
        }
        let remaining = max(1, Int(renewed.expires.timeIntervalSince(site.now()).rounded(.up)))
        return Reply.json(
            MeResponse(user: UserInfo(name: renewed.user), expiresAt: RFC3339.string(from: renewed.expires)),
            cookies: [SiteCookie.session(renewed.id, maxAge: remaining)])
    }
}

extension Data {
    init(buffer: ByteBuffer) {
        self = buffer.withUnsafeReadableBytes { Data($0) }
    }
}
