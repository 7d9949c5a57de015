import DemoSite
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("Session lifetime, revocation and the down switch")
struct SessionLifetimeTests {
    @Test("Fixed sessions: /ping answers 204 without a new cookie and the session dies at Max-Age")
    func fixedSession() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(sessionMaxAge: 60), now: clock.function)
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let session = try await steps.logIn()
            clock.advance(by: 40)
            let ping = try await client.execute(uri: "/ping", method: .get, headers: Headers.cookies(["demo_session": session]))
            #expect(ping.status == .noContent)
            #expect(ping.cookie("demo_session") == nil)
            clock.advance(by: 19)
            #expect(try await steps.me(session: session).status == .ok)
            clock.advance(by: 1)
            #expect(try await steps.me(session: session).status == .unauthorized, "expired at exactly Max-Age")
        }
    }

    @Test("Sliding sessions: /ping re-issues demo_session with a fresh Max-Age and moves the expiry")
    func slidingSession() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(sessionMaxAge: 60, sliding: true), now: clock.function)
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let session = try await steps.logIn()
            clock.advance(by: 40)
            let ping = try await client.execute(uri: "/ping", method: .get, headers: Headers.cookies(["demo_session": session]))
            #expect(ping.status == .noContent)
            let reissued = try #require(ping.cookie("demo_session"))
            #expect(reissued.value == session)
            #expect(reissued.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=60"])
            let expected = clock.now.addingTimeInterval(60).formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
            #expect(try await steps.me(session: session).json()["expires_at"] as? String == expected)
            // 80 s after login: a fixed session would be dead, the slid one lives until 100 s.
            clock.advance(by: 40)
            #expect(try await steps.me(session: session).status == .ok)
            clock.advance(by: 20)
            #expect(try await steps.me(session: session).status == .unauthorized)
            // A dead session cannot be revived by a ping.
            let late = try await client.execute(uri: "/ping", method: .get, headers: Headers.cookies(["demo_session": session]))
            #expect(late.status == .unauthorized)
            #expect(late.cookie("demo_session") == nil)
        }
    }

    @Test("Revoke-all kills every existing session, and new logins work afterwards")
    func revokeAll() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let first = try await steps.logIn()
            let second = try await steps.logIn()
            #expect(first != second)
            let stats = try await client.execute(uri: "/_control/stats", method: .get).json()
            #expect(stats["active_sessions"] as? Int == 2)

            let revoke = try await client.execute(uri: "/_control/revoke-all", method: .post)
            #expect(revoke.status == .ok)
            #expect(try revoke.json()["revoked"] as? Int == 2)
            for session in [first, second] {
                #expect(try await steps.me(session: session).status == .unauthorized)
                let account = try await client.execute(uri: "/account", method: .get, headers: Headers.cookies(["demo_session": session]))
                #expect(account.status == .found)
                #expect(account.location == "/login?next=/account")
            }
            let third = try await steps.logIn()
            #expect(try await steps.me(session: third).status == .ok)
        }
    }

    @Test("Down switch: 503 on every site route, control routes still answer, and back up again")
    func downSwitch() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let session = try await steps.logIn()
            let down = try await client.execute(uri: "/_control/down?enabled=true", method: .post)
            #expect(down.status == .ok)
            #expect(try down.json()["down"] as? Bool == true)
            for (uri, method) in [("/login", HTTPRequest.Method.get), ("/api/me", .get), ("/account", .get), ("/ping", .get), ("/login", .post), ("/sso/start", .get)] {
                let response = try await client.execute(uri: uri, method: method, headers: Headers.cookies(["demo_session": session]))
                #expect(response.status == .serviceUnavailable, "\(method) \(uri)")
            }
            let stats = try await client.execute(uri: "/_control/stats", method: .get)
            #expect(stats.status == .ok)
            #expect(try stats.json()["down"] as? Bool == true)

            let up = try await client.execute(uri: "/_control/down?enabled=false", method: .post)
            #expect(try up.json()["down"] as? Bool == false)
            #expect(try await steps.me(session: session).status == .ok, "sessions survive an outage")

            let invalid = try await client.execute(uri: "/_control/down?enabled=maybe", method: .post)
            #expect(invalid.status == .badRequest)
        }
    }

    @Test("Stats count logins and non-control requests")
    func statistics() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            _ = try await LoginSteps(client: client).logIn()
            let stats = try await client.execute(uri: "/_control/stats", method: .get).json()
            #expect(stats["logins"] as? Int == 1)
            #expect(stats["requests"] as? Int == 2, "GET /login and POST /login; control routes are not counted")
            #expect(stats["failed_logins"] as? Int == 0)
        }
    }
}
