import DemoSite
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("JSON login API")
struct APITests {
    @Test("POST /api/login: 200 with token and user, a session cookie, and the token works as a bearer token")
    func jsonLogin() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(sessionMaxAge: 120))
        try await app.test(.router) { client in
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
        try await app.test(.router) { client in
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
        try await app.test(.router) { client in
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
}
