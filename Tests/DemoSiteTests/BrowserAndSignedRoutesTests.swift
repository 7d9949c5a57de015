import Crypto
import Foundation
import HTTPTypes
import HTTPTypes
import NIOCore
import Testing

@testable import DemoSite

/// The JavaScript sign-in (`/app/...`) and the signed API route (`/api/signed`), driven in-process with a
/// settable clock. The page's script itself runs in the browser test (CLITests' BrowserLoginTests).
@Suite("JavaScript sign-in and signed requests")
struct BrowserAndSignedRoutesTests {
    /// FNV-1a (32 bits) over "NONCE:USER", eight hex digits with leading zeros (values computed apart).
    @Test func proofIsFNV1aOfNonceAndUser() {
        #expect(BrowserChallenges.proof(nonce: "n1.abc.sig", user: "alice") == "9d762b2f")
        #expect(BrowserChallenges.proof(nonce: "foo", user: "bar") != BrowserChallenges.proof(nonce: "foo", user: "baz"))
    }

    static func signIn(
        _ client: SiteClient, nonce: String, user: String = "alice", password: String = "wonderland", proof: String? = nil
    ) async throws -> TestResponse {
        let body = try JSONSerialization.data(withJSONObject: [
            "username": user, "password": password, "nonce": nonce, "proof": proof ?? BrowserChallenges.proof(nonce: nonce, user: user),
        ])
        return try await client.execute(uri: "/app/session", method: .post, headers: Headers.json, body: ByteBuffer(string: String(decoding: body, as: UTF8.self)))
    }

    @Test func thePageIsBuiltByItsScriptAndTheProtectedPageNeedsTheSession() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(sessionMaxAge: 600), now: clock.function)
        try await app.withLiveServer { client in
            let page = try await client.execute(uri: "/app/login", method: .get)
            #expect(page.status == .ok)
            #expect(page.text.contains(#"<script src="/app/login.js"></script>"#))
            #expect(!page.text.contains("<form"), "the form exists only once the script ran")
            let script = try await client.execute(uri: "/app/login.js", method: .get)
            #expect(script.headers[.contentType] == "text/javascript; charset=utf-8")
            #expect(script.text.contains("/app/challenge") && script.text.contains("Math.imul"))

            let away = try await client.execute(uri: "/app/home", method: .get)
            #expect(away.status == .found && away.location == "/app/login")

            let challenge = try await client.execute(uri: "/app/challenge", method: .get)
            let nonce = try #require(try challenge.json()["nonce"] as? String)
            let signedIn = try await Self.signIn(client, nonce: nonce)
            #expect(signedIn.status == .ok)
            #expect(try signedIn.json()["next"] as? String == "/app/home")
            let session = try #require(signedIn.cookie("demo_session"))
            #expect(session.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=600"])

            let home = try await client.execute(uri: "/app/home", method: .get, headers: Headers.cookies(["demo_session": session.value]))
            #expect(home.status == .ok)
            #expect(home.text.contains("Signed in to the app as alice"))
        }
    }

    @Test func aScriptedClientWithoutTheProofOrWithAnOldNonceIsRefused() async throws {
        let clock = TestClock()
        let app = try DemoSite.buildApplication(configuration: .init(password: "s3cret-pass"), now: clock.function)
        try await app.withLiveServer { client in
            let nonce = try #require(try await client.execute(uri: "/app/challenge", method: .get).json()["nonce"] as? String)

            let noProof = try await Self.signIn(client, nonce: nonce, password: "s3cret-pass", proof: "00000000")
            #expect(noProof.status == .badRequest)
            #expect(try noProof.json()["error"] as? String == "wrong proof")
            let forged = try await Self.signIn(client, nonce: "1800000000.abc.forged", password: "s3cret-pass")
            #expect(forged.status == .badRequest)
            #expect(try forged.json()["error"] as? String == "invalid or expired challenge")
            let wrongPassword = try await Self.signIn(client, nonce: nonce, password: "wonderland")
            #expect(wrongPassword.status == .unauthorized)
            #expect(wrongPassword.cookie("demo_session") == nil)
            let malformed = try await client.execute(uri: "/app/session", method: .post, headers: Headers.json, body: ByteBuffer(string: "{}"))
            #expect(malformed.status == .badRequest)

            clock.advance(by: BrowserChallenges.lifetime + 1)
            let late = try await Self.signIn(client, nonce: nonce, password: "s3cret-pass")
            #expect(late.status == .badRequest)
            #expect(try late.json()["error"] as? String == "invalid or expired challenge")
        }
    }

    @Test func withTheSecondFactorOnTheJavaScriptSignInIsRefused() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(totpSecret: TOTPTests.rfcSecretBase32))
        try await app.withLiveServer { client in
            let nonce = try #require(try await client.execute(uri: "/app/challenge", method: .get).json()["nonce"] as? String)
            let response = try await Self.signIn(client, nonce: nonce)
            #expect(response.status == .forbidden)
            #expect(response.cookie("demo_session") == nil)
        }
    }

    /// The signature as a client computes it on its own: HMAC-SHA256 over "METHOD\nPATH\nTIMESTAMP", in hex.
    static func signature(key: String, method: String = "GET", path: String = "/api/signed", timestamp: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data("\(method)\n\(path)\n\(timestamp)".utf8), using: SymmetricKey(data: Data(key.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    @Test func signedRouteAcceptsAFreshRightSignatureOnly() async throws {
        let clock = TestClock()
        let key = "signing-key-for-tests"
        let app = try DemoSite.buildApplication(configuration: .init(signingKey: key), now: clock.function)
        let now = String(Int(clock.now.timeIntervalSince1970))
        func call(timestamp: String?, signature: String?) async throws -> (HTTPResponse.Status, String?) {
            var fields = HTTPFields()
            if let timestamp { fields[HTTPField.Name("X-Signature-Timestamp")!] = timestamp }
            if let signature { fields[HTTPField.Name("X-Signature")!] = signature }
            let headers = fields
            return try await app.withLiveServer { client in
                let response = try await client.execute(uri: "/api/signed?page=1", method: .get, headers: headers)
                return (response.status, try response.json()["error"] as? String)
            }
        }
        let valid = try await call(timestamp: now, signature: Self.signature(key: key, timestamp: now))
        #expect(valid.0 == .ok && valid.1 == nil)
        let missing = try await call(timestamp: nil, signature: nil)
        #expect(missing.0 == .unauthorized && missing.1?.contains("required") == true)
        let wrongKey = try await call(timestamp: now, signature: Self.signature(key: "another-key", timestamp: now))
        #expect(wrongKey.0 == .unauthorized && wrongKey.1 == "wrong signature")
        let wrongPath = try await call(timestamp: now, signature: Self.signature(key: key, path: "/api/other", timestamp: now))
        #expect(wrongPath.0 == .unauthorized && wrongPath.1 == "wrong signature")
        let stale = String(Int(clock.now.timeIntervalSince1970) - 301)
        let old = try await call(timestamp: stale, signature: Self.signature(key: key, timestamp: stale))
        #expect(old.0 == .unauthorized && old.1?.hasPrefix("stale signature") == true)
    }

    @Test func theSigningKeyIsMaskedInTheConfigurationsDescription() {
        let configuration = DemoSite.Configuration(signingKey: "very-private-signing-key")
        #expect(!configuration.description.contains("very-private-signing-key"))
        #expect(!String(reflecting: configuration).contains("very-private-signing-key"))
    }
}
