import DemoSite
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("Sign-in with a code sent out of band")
struct CodeRoutesTests {
    @Test("POST /login/code sends a code that /_control/sent-code shows; /login/code/verify takes it once")
    func aCodeSentOutOfBandSignsInOnce() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let none = try await client.execute(uri: "/_control/sent-code", method: .get)
            #expect(none.status == .notFound)

            let refused = try await client.execute(
                uri: "/login/code", method: .post, headers: Headers.form, body: formBody(["username": "alice", "password": "nope"]))
            #expect(refused.status == .unauthorized)
            #expect(try await client.execute(uri: "/_control/sent-code", method: .get).status == .notFound)

            let sent = try await client.execute(
                uri: "/login/code", method: .post, headers: Headers.form, body: formBody(["username": "alice", "password": "wonderland"]))
            #expect(sent.status == .ok)
            #expect(sent.text.contains("A code was sent to the phone ending 42"))
            let pending = try #require(sent.cookie("demo_pending")).value
            let code = try #require(try await client.execute(uri: "/_control/sent-code", method: .get).json()["code"] as? String)
            #expect(code.count == 6 && code.allSatisfy(\.isNumber))

            let wrongCode = code == "000000" ? "000001" : "000000"
            let wrong = try await client.execute(
                uri: "/login/code/verify", method: .post, headers: Headers.cookies(["demo_pending": pending], extra: Headers.form),
                body: formBody(["code": wrongCode]))
            #expect(wrong.status == .unauthorized && wrong.text.contains("Invalid code"))

            let verified = try await client.execute(
                uri: "/login/code/verify", method: .post, headers: Headers.cookies(["demo_pending": pending], extra: Headers.form),
                body: formBody(["code": code]))
            #expect(verified.status == .seeOther && verified.location == "/account")
            let session = try #require(verified.cookie("demo_session"))
            let me = try await client.execute(uri: "/api/me", method: .get, headers: Headers.cookies(["demo_session": session.value]))
            #expect(me.status == .ok)

            // The code and its pending login are used up.
            let again = try await client.execute(
                uri: "/login/code/verify", method: .post, headers: Headers.cookies(["demo_pending": pending], extra: Headers.form),
                body: formBody(["code": code]))
            #expect(again.status == .unauthorized && again.text.contains("Sign in again"))
        }
    }
}
