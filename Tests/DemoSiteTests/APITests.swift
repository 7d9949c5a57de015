import DemoSite
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("JSON login API")
struct APITests {
    @Test("POST /api/login: 200 with token and user, a session cookie, and the token works as a bearer token")
    func jsonLogin() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(sessionMaxAge: 120))
        try await app.withLiveServer { client in
            let response = try await client.execute(
                uri: "/api/login",
                method: .post,
                headers: Headers.json,
                body: ByteBuffer(string: #"{"username":"alice","password":"wonderland"}"#)
            )
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json")
            let json = try response.json()
            let token = try #require(json["token"] as? String)
            #expect((json["user"] as? [String: Any])?["name"] as? String == "alice")
            let cookie = try #require(response.cookie("demo_session"))
            #expect(cookie.value == token)
            #expect(cookie.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=120"])

            let bearer = try await client.execute(uri: "/api/me", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(bearer.status == .ok)
            let wrongBearer = try await client.execute(uri: "/api/me", method: .get, headers: [.authorization: "Bearer nope"])
            #expect(wrongBearer.status == .unauthorized)
        }
    }

    @Test("Wrong credentials answer 401 JSON; a malformed body answers 400")
    func failures() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(password: "s3cret-pass"))
        try await app.withLiveServer { client in
            let wrong = try await client.execute(
                uri: "/api/login",
                method: .post,
                headers: Headers.json,
                body: ByteBuffer(string: #"{"username":"alice","password":"wonderland"}"#)
            )
            #expect(wrong.status == .unauthorized)
            #expect(try wrong.json()["error"] as? String == "invalid username or password")
            #expect(wrong.cookie("demo_session") == nil)
            for body in ["not json", #"{"username":"alice"}"#, "[]"] {
                let bad = try await client.execute(uri: "/api/login", method: .post, headers: Headers.json, body: ByteBuffer(string: body))
                #expect(bad.status == .badRequest, "\(body)")
                #expect(try bad.json()["error"] != nil)
            }
            let right = try await client.execute(
                uri: "/api/login",
                method: .post,
                headers: Headers.json,
                body: ByteBuffer(string: #"{"username":"alice","password":"s3cret-pass"}"#)
            )
            #expect(right.status == .ok)
        }
    }

    @Test("With TOTP on, /api/login needs a code")
    func totpRequired() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: TOTPTests.rfcSecretBase32))
        try await app.withLiveServer { client in
            let response = try await client.execute(
                uri: "/api/login",
                method: .post,
                headers: Headers.json,
                body: ByteBuffer(string: #"{"username":"alice","password":"wonderland"}"#)
            )
            #expect(response.status == .unauthorized)
            #expect(try response.json()["error"] as? String == "totp code required")
            #expect(response.cookie("demo_session") == nil)
        }
    }

    @Test("GET /api/rotate: a new session id in demo_session with the remaining Max-Age, the old id dead at once, no login counted")
    func rotatingCookie() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(sessionMaxAge: 120), now: clock.function)
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let first = try await steps.logIn()
            let expiresAt = try await steps.me(session: first).json()["expires_at"] as? String
            clock.advance(by: 10)

            let rotated = try await client.execute(uri: "/api/rotate", method: .get, headers: Headers.cookies(["demo_session": first]))
            #expect(rotated.status == .ok)
            #expect(try rotated.json()["expires_at"] as? String == expiresAt)
            let cookie = try #require(rotated.cookie("demo_session"))
            #expect(cookie.value != first)
            #expect(cookie.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=110"])
            #expect(try await steps.me(session: first).status == .unauthorized, "the old id is revoked")
            let second = try await steps.me(session: cookie.value)
            #expect(second.status == .ok)
            #expect(try second.json()["expires_at"] as? String == expiresAt, "the session keeps its expiry")

            let again = try await client.execute(uri: "/api/rotate", method: .get, headers: Headers.cookies(["demo_session": cookie.value]))
            #expect(try #require(again.cookie("demo_session")).value != cookie.value, "every use rotates")
            let stale = try await client.execute(uri: "/api/rotate", method: .get, headers: Headers.cookies(["demo_session": first]))
            #expect(stale.status == .unauthorized)
            #expect(stale.cookie("demo_session") == nil)
            let stats = try await client.execute(uri: "/_control/stats", method: .get).json()
            #expect(stats["logins"] as? Int == 1)
            #expect(stats["active_sessions"] as? Int == 1)
        }
    }
}
