import DemoSite
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("TOTP second factor (RFC 6238)")
struct TOTPTests {
    /// RFC 6238 Appendix B's SHA-1 seed, "12345678901234567890", and its base32 form.
    static let rfcSecret = Array("12345678901234567890".utf8)
    static let rfcSecretBase32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    @Test(
        "The test's reference TOTP matches RFC 6238 Appendix B (SHA-1, 8 digits)",
        arguments: [
            (Int64(59), "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
    )
    func referenceMatchesRFC(time: Int64, expected: String) {
        #expect(ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: time, digits: 8) == expected)
        #expect(ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: time) == String(expected.suffix(6)))
    }

    @Test("Password, then the code for now: 303 to /login/totp with demo_pending, then 303 /account with a session")
    func totpFlow() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_111_111_109))
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: Self.rfcSecretBase32), now: clock.function)
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let csrf = try await steps.fetchForm()
            let password = try await steps.post(csrfField: csrf.field, csrfCookie: csrf.cookie)
            #expect(password.status == .seeOther)
            #expect(password.location == "/login/totp")
            #expect(password.cookie("demo_session") == nil, "no session before the second factor")
            let pending = try #require(password.cookie("demo_pending"))
            #expect(pending.attributes == ["Path=/", "HttpOnly"])

            let page = try await client.execute(uri: "/login/totp", method: .get, headers: Headers.cookies(["demo_pending": pending.value]))
            #expect(page.status == .ok)
            #expect(page.text.contains("<form id=\"totp\" method=\"post\" action=\"/login/totp\">"))
            #expect(page.text.contains("name=\"code\""))
            let totpCSRF = try hiddenField("csrf", in: page.text)
            #expect(try #require(page.cookie("demo_csrf")).value == totpCSRF)

            let submit = { (code: String) in
                try await client.execute(
                    uri: "/login/totp",
                    method: .post,
                    headers: Headers.cookies(["demo_pending": pending.value, "demo_csrf": totpCSRF], extra: Headers.form),
                    body: formBody(["csrf": totpCSRF, "code": code])
                )
            }
            let now = Int64(clock.now.timeIntervalSince1970)
            let wrong = try await submit(ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: now + 90))
            #expect(wrong.status == .ok)
            #expect(wrong.text.contains("Invalid code"))
            #expect(wrong.cookie("demo_session") == nil)

            let code = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: now)
            #expect(code == "081804", "RFC 6238's vector at T=1111111109, six digits")
            let accepted = try await submit(code)
            #expect(accepted.status == .seeOther)
            #expect(accepted.location == "/account")
            let session = try #require(accepted.cookie("demo_session"))
            #expect(session.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=3600"])
            #expect(try #require(accepted.cookie("demo_pending")).maxAge == 0)
            #expect(try await steps.me(session: session.value).status == .ok)

            // The pending login is used up.
            let replay = try await submit(code)
            #expect(replay.status == .seeOther)
            #expect(replay.location == "/login")
        }
    }

    @Test("Codes one step either side are accepted, two steps away are not", arguments: [(-30.0, true), (30, true), (-60, false), (60, false)])
    func clockDrift(offset: TimeInterval, accepted: Bool) async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 2_000_000_000))
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: Self.rfcSecretBase32), now: clock.function)
        try await app.withLiveServer { client in
            let code = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: Int64(clock.now.timeIntervalSince1970 + offset))
            let response = try await client.execute(
                uri: "/api/login",
                method: .post,
                headers: Headers.json,
                body: ByteBuffer(string: #"{"username":"alice","password":"wonderland","code":"\#(code)"}"#)
            )
            #expect(response.status == (accepted ? .ok : .unauthorized))
        }
    }

    @Test("With --totp-drift 0 only the current step's code is accepted", arguments: [(0.0, true), (-30, false), (30, false)])
    func noDrift(offset: TimeInterval, accepted: Bool) async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 2_000_000_000))
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: Self.rfcSecretBase32, totpDrift: 0), now: clock.function)
        try await app.withLiveServer { client in
            let code = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: Int64(clock.now.timeIntervalSince1970 + offset))
            let response = try await client.execute(
                uri: "/api/login",
                method: .post,
                headers: Headers.json,
                body: ByteBuffer(string: #"{"username":"alice","password":"wonderland","code":"\#(code)"}"#)
            )
            #expect(response.status == (accepted ? .ok : .unauthorized))
        }
    }

    @Test("Five wrong codes drop the pending login; /login/totp without one goes back to /login")
    func tooManyWrongCodes() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: Self.rfcSecretBase32), now: clock.function)
        try await app.withLiveServer { client in
            let noPending = try await client.execute(uri: "/login/totp", method: .get)
            #expect(noPending.status == .seeOther)
            #expect(noPending.location == "/login")

            let steps = LoginSteps(client: client)
            let csrf = try await steps.fetchForm()
            let pending = try #require(try await steps.post(csrfField: csrf.field, csrfCookie: csrf.cookie).cookie("demo_pending")).value
            let now = Int64(clock.now.timeIntervalSince1970)
            let wrongCode = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: now + 300)
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<5 {
                let response = try await client.execute(
                    uri: "/login/totp",
                    method: .post,
                    headers: Headers.cookies(["demo_pending": pending, "demo_csrf": csrf.cookie], extra: Headers.form),
                    body: formBody(["csrf": csrf.field, "code": wrongCode])
                )
                statuses.append(response.status)
            }
            #expect(statuses == [.ok, .ok, .ok, .ok, .seeOther])
            let right = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: now)
            let late = try await client.execute(
                uri: "/login/totp",
                method: .post,
                headers: Headers.cookies(["demo_pending": pending, "demo_csrf": csrf.cookie], extra: Headers.form),
                body: formBody(["csrf": csrf.field, "code": right])
            )
            #expect(late.status == .seeOther)
            #expect(late.location == "/login")
            #expect(late.cookie("demo_session") == nil)
        }
    }

    @Test("The TOTP form checks CSRF too")
    func totpCSRF() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: Self.rfcSecretBase32), now: clock.function)
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let csrf = try await steps.fetchForm()
            let pending = try #require(try await steps.post(csrfField: csrf.field, csrfCookie: csrf.cookie).cookie("demo_pending")).value
            let response = try await client.execute(
                uri: "/login/totp",
                method: .post,
                headers: Headers.cookies(["demo_pending": pending], extra: Headers.form),
                body: formBody(["csrf": csrf.field, "code": ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: Int64(clock.now.timeIntervalSince1970))])
            )
            #expect(response.status == .forbidden)
            #expect(response.text.contains("CSRF check failed"))
        }
    }

    @Test("Replay: a used code is refused with --totp-reject-replay, accepted again without it", arguments: [true, false])
    func replay(rejectReplay: Bool) async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_234_567_890))
        let app = try DemoSite.buildApplication(
            configuration: .init(totpSecret: Self.rfcSecretBase32, totpRejectReplay: rejectReplay),
            now: clock.function
        )
        try await app.withLiveServer { client in
            let login = { (time: Int64) in
                let code = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: time)
                return try await client.execute(
                    uri: "/api/login",
                    method: .post,
                    headers: Headers.json,
                    body: ByteBuffer(string: #"{"username":"alice","password":"wonderland","code":"\#(code)"}"#)
                )
            }
            let now = Int64(clock.now.timeIntervalSince1970)
            #expect(try await login(now).status == .ok)
            let again = try await login(now)
            #expect(again.status == (rejectReplay ? .unauthorized : .ok))
            if rejectReplay {
                #expect(try again.json()["error"] as? String == "totp code already used")
                // The previous step's code is older than the used one: refused too.
                #expect(try await login(now - 30).status == .unauthorized)
            }
            // The next step's code is always fresh.
            clock.advance(by: 30)
            #expect(try await login(now + 30).status == .ok)
        }
    }

    @Test("Replay through the form says the code was used")
    func replayThroughForm() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_234_567_890))
        let app = try DemoSite.buildApplication(
            configuration: .init(totpSecret: Self.rfcSecretBase32, totpRejectReplay: true),
            now: clock.function
        )
        try await app.withLiveServer { client in
            let code = ReferenceTOTP.code(secret: Self.rfcSecret, unixTime: Int64(clock.now.timeIntervalSince1970))
            #expect(code == "005924", "RFC 6238's vector at T=1234567890, six digits")
            var statuses: [HTTPResponse.Status] = []
            var pages: [String] = []
            for _ in 0..<2 {
                let steps = LoginSteps(client: client)
                let csrf = try await steps.fetchForm()
                let pending = try #require(try await steps.post(csrfField: csrf.field, csrfCookie: csrf.cookie).cookie("demo_pending")).value
                let response = try await client.execute(
                    uri: "/login/totp",
                    method: .post,
                    headers: Headers.cookies(["demo_pending": pending, "demo_csrf": csrf.cookie], extra: Headers.form),
                    body: formBody(["csrf": csrf.field, "code": code])
                )
                statuses.append(response.status)
                pages.append(response.text)
            }
            #expect(statuses == [.seeOther, .ok])
            #expect(pages[1].contains("this code was already used"))
        }
    }
}
