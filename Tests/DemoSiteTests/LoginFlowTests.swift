import DemoSite
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("Password login through the form")
struct LoginFlowTests {
    @Test("--login-page-padding makes the sign-in page that much larger; the form and its token stay the same")
    func paddedLoginPage() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(loginPagePadding: 1_000_000))
        try await app.withLiveServer { client in
            let page = try await client.execute(uri: "/login", method: .get)
            #expect(page.status == .ok)
            #expect(page.body.readableBytes > 1_000_000)
            #expect(page.text.contains("<form id=\"login\" method=\"post\" action=\"/login\">"))
            let csrfCookie = try #require(page.cookie("demo_csrf"))
            #expect(try hiddenField("csrf", in: page.text) == csrfCookie.value)
        }
    }

    @Test("GET /login, POST /login, then /api/me and /account with the session cookie")
    func wholeLoginFlow() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(), now: clock.function)
        try await app.withLiveServer { client in
            let page = try await client.execute(uri: "/login", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.text.contains("<form id=\"login\" method=\"post\" action=\"/login\">"))
            #expect(page.text.contains("name=\"username\""))
            #expect(page.text.contains("name=\"password\""))
            let csrfCookie = try #require(page.cookie("demo_csrf"))
            #expect(csrfCookie.attributes == ["Path=/", "HttpOnly", "SameSite=Strict"])
            let csrfField = try hiddenField("csrf", in: page.text)
            #expect(csrfField == csrfCookie.value)

            let steps = LoginSteps(client: client)
            let login = try await steps.post(csrfField: csrfField, csrfCookie: csrfCookie.value)
            #expect(login.status == .seeOther)
            #expect(login.location == "/account")
            let session = try #require(login.cookie("demo_session"))
            #expect(session.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=3600"])
            #expect(session.value.count >= 43, "a 256-bit random id")

            let me = try await steps.me(session: session.value)
            #expect(me.status == .ok)
            #expect(me.headers[.contentType] == "application/json")
            let json = try me.json()
            #expect((json["user"] as? [String: Any])?["name"] as? String == "alice")
            let expected = clock.now.addingTimeInterval(3600).formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
            #expect(json["expires_at"] as? String == expected)

            let account = try await client.execute(
                uri: "/account",
                method: .get,
                headers: Headers.cookies(["demo_session": session.value])
            )
            #expect(account.status == .ok)
            #expect(account.text.contains("Welcome, alice"))
            #expect(account.headers[.cacheControl] == "no-store")
        }
    }

    @Test("Without a session /account redirects to the login page and /api/me answers 401 JSON")
    func notLoggedIn() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let account = try await client.execute(uri: "/account", method: .get)
            #expect(account.status == .found)
            #expect(account.location == "/login?next=/account")
            let me = try await client.execute(uri: "/api/me", method: .get, headers: Headers.cookies(["demo_session": "forged"]))
            #expect(me.status == .unauthorized)
            #expect(try me.json()["error"] as? String == "not logged in")
            let ping = try await client.execute(uri: "/ping", method: .get)
            #expect(ping.status == .unauthorized)
        }
    }

    @Test("A next field from /login?next= decides where a login lands; foreign targets are ignored")
    func nextParameter() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let page = try await client.execute(uri: "/login?next=/account", method: .get)
            #expect(try hiddenField("next", in: page.text) == "/account")
            let foreign = try await client.execute(uri: "/login?next=//evil.example/", method: .get)
            #expect(!foreign.text.contains("name=\"next\""))
            let csrf = try #require(foreign.cookie("demo_csrf")).value
            let login = try await client.execute(
                uri: "/login",
                method: .post,
                headers: Headers.cookies(["demo_csrf": csrf], extra: Headers.form),
                body: formBody(["csrf": csrf, "username": "alice", "password": "wonderland", "next": "https://evil.example/"])
            )
            #expect(login.status == .seeOther)
            #expect(login.location == "/account")
        }
    }

    @Test("Wrong password or user name: 200 with the error, no session, a fresh CSRF token")
    func wrongCredentials() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            for (user, password) in [("alice", "Wonderland"), ("bob", "wonderland"), ("alice", "")] {
                let csrf = try await steps.fetchForm()
                let response = try await steps.post(user: user, password: password, csrfField: csrf.field, csrfCookie: csrf.cookie)
                #expect(response.status == .ok)
                #expect(response.text.contains("Invalid username or password"))
                #expect(response.text.contains("<form id=\"login\""))
                #expect(response.cookie("demo_session") == nil)
                let renewed = try #require(response.cookie("demo_csrf"))
                #expect(renewed.value != csrf.cookie)
                #expect(!response.text.contains(password) || password.isEmpty, "the password is never echoed")
            }
            let stats = try await client.execute(uri: "/_control/stats", method: .get).json()
            #expect(stats["failed_logins"] as? Int == 3)
            #expect(stats["logins"] as? Int == 0)
        }
    }

    @Test("CSRF: field and cookie must both be present, equal, and issued by this site")
    func csrfChecks() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let first = try await steps.fetchForm()
            let second = try await steps.fetchForm()
            #expect(first.cookie != second.cookie)

            // Field from one page, cookie from another.
            let mismatch = try await steps.post(csrfField: first.field, csrfCookie: second.cookie)
            #expect(mismatch.status == .forbidden)
            #expect(mismatch.text.contains("CSRF check failed"))
            #expect(mismatch.cookie("demo_session") == nil)

            // No cookie at all.
            let noCookie = try await client.execute(
                uri: "/login",
                method: .post,
                headers: Headers.form,
                body: formBody(["csrf": first.field, "username": "alice", "password": "wonderland"])
            )
            #expect(noCookie.status == .forbidden)

            // No field.
            let noField = try await client.execute(
                uri: "/login",
                method: .post,
                headers: Headers.cookies(["demo_csrf": first.cookie], extra: Headers.form),
                body: formBody(["username": "alice", "password": "wonderland"])
            )
            #expect(noField.status == .forbidden)

            // A made-up token sent as both field and cookie has no valid signature.
            let forged = try await steps.post(csrfField: "made.up", csrfCookie: "made.up")
            #expect(forged.status == .forbidden)

            // The genuine pair still works.
            let good = try await steps.post(csrfField: second.field, csrfCookie: second.cookie)
            #expect(good.status == .seeOther)
        }
    }

    @Test("A token from another run of the site is refused")
    func csrfFromAnotherInstance() async throws {
        let other = try DemoSite.buildApplication(configuration: .init())
        let foreign = try await other.withLiveServer { client in try await LoginSteps(client: client).fetchForm() }
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let response = try await LoginSteps(client: client).post(csrfField: foreign.field, csrfCookie: foreign.cookie)
            #expect(response.status == .forbidden)
        }
    }

    @Test("Logout revokes the session on the server and expires the cookie")
    func logout() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let session = try await steps.logIn()
            let response = try await client.execute(uri: "/logout", method: .post, headers: Headers.cookies(["demo_session": session]))
            #expect(response.status == .seeOther)
            #expect(response.location == "/login")
            let expired = try #require(response.cookie("demo_session"))
            #expect(expired.value.isEmpty)
            #expect(expired.maxAge == 0)
            #expect(expired.attributes.contains("Path=/"))
            // The old cookie value no longer works even if a client keeps sending it.
            #expect(try await steps.me(session: session).status == .unauthorized)
            // Logging out again is harmless.
            let again = try await client.execute(uri: "/logout", method: .post, headers: Headers.cookies(["demo_session": session]))
            #expect(again.status == .seeOther)
        }
    }

    @Test("HEAD works wherever GET does; unknown paths answer 404")
    func headAndUnknown() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let head = try await client.execute(uri: "/login", method: .head)
            #expect(head.status == .ok)
            let unknown = try await client.execute(uri: "/nope", method: .get)
            #expect(unknown.status == .notFound)
        }
    }

    @Test("An oversized form body is refused with 413")
    func oversizedBody() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let response = try await client.execute(
                uri: "/login",
                method: .post,
                headers: Headers.form,
                body: ByteBuffer(string: "username=" + String(repeating: "a", count: 20_000))
            )
            #expect(response.status == .contentTooLarge)
        }
    }
}
