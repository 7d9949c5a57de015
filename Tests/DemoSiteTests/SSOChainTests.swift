import DemoSite
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("Redirect chain across the main and SSO host names")
struct SSOChainTests {
    @Test("start (main) → authorize (SSO, sets sso_id) → callback (main, sets demo_session) → /account")
    func chain() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(port: 8480))
        try await app.withLiveServer { client in
            let start = try await client.execute(uri: "/sso/start", method: .get, headers: Headers.cookies([:], host: "demo.test:8480"))
            #expect(start.status == .found)
            let authorizeURL = try #require(start.location.flatMap(URLComponents.init(string:)))
            #expect(authorizeURL.scheme == "http")
            #expect(authorizeURL.host == "sso.demo.test")
            #expect(authorizeURL.port == 8480)
            #expect(authorizeURL.path == "/sso/authorize")
            let returnURL = try #require(authorizeURL.queryItems?.first { $0.name == "return" }?.value)
            #expect(returnURL == "http://demo.test:8480/sso/callback")
            #expect(start.setCookies.isEmpty)

            let authorize = try await client.execute(
                uri: authorizeURL.percentEncodedPath + "?" + (authorizeURL.percentEncodedQuery ?? ""),
                method: .get,
                headers: Headers.cookies([:], host: "sso.demo.test:8480")
            )
            #expect(authorize.status == .found)
            let ssoCookie = try #require(authorize.cookie("sso_id"))
            #expect(ssoCookie.attributes == ["Path=/", "HttpOnly", "SameSite=Lax"])
            #expect(!ssoCookie.attributes.contains { $0.lowercased().hasPrefix("domain=") }, "host-only")
            #expect(authorize.cookie("demo_session") == nil)
            let callbackURL = try #require(authorize.location.flatMap(URLComponents.init(string:)))
            #expect(callbackURL.host == "demo.test")
            #expect(callbackURL.port == 8480)
            #expect(callbackURL.path == "/sso/callback")
            let ticket = try #require(callbackURL.queryItems?.first { $0.name == "ticket" }?.value)

            let callback = try await client.execute(
                uri: "/sso/callback?ticket=\(ticket)",
                method: .get,
                headers: Headers.cookies([:], host: "demo.test:8480")
            )
            #expect(callback.status == .seeOther)
            #expect(callback.location == "/account")
            let session = try #require(callback.cookie("demo_session"))
            #expect(session.attributes == ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=3600"])
            #expect(callback.cookie("sso_id") == nil, "the main host never sets the SSO host's cookie")

            let account = try await client.execute(
                uri: "/account",
                method: .get,
                headers: Headers.cookies(["demo_session": session.value], host: "demo.test:8480")
            )
            #expect(account.text.contains("Welcome, alice"))

            // A ticket is single use.
            let replay = try await client.execute(uri: "/sso/callback?ticket=\(ticket)", method: .get, headers: Headers.cookies([:], host: "demo.test:8480"))
            #expect(replay.status == .forbidden)
            #expect(replay.cookie("demo_session") == nil)

            // A second pass with the sso_id cookie keeps the same SSO identity.
            let again = try await client.execute(
                uri: "/sso/authorize?return=http%3A%2F%2Fdemo.test%3A8480%2Fsso%2Fcallback",
                method: .get,
                headers: Headers.cookies(["sso_id": ssoCookie.value], host: "sso.demo.test:8480")
            )
            #expect(again.status == .found)
            #expect(try #require(again.cookie("sso_id")).value == ssoCookie.value)
        }
    }

    @Test("Each host serves only its own routes")
    func hostSeparation() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            let onMain = try await client.execute(
                uri: "/sso/authorize?return=http%3A%2F%2Fdemo.test%3A8480%2Fsso%2Fcallback",
                method: .get,
                headers: Headers.cookies([:], host: "demo.test:8480")
            )
            #expect(onMain.status == .notFound)
            for path in ["/login", "/account", "/api/me", "/sso/start", "/sso/callback?ticket=x"] {
                let onSSO = try await client.execute(uri: path, method: .get, headers: Headers.cookies([:], host: "SSO.demo.test:8480"))
                #expect(onSSO.status == .notFound, "\(path) on the SSO host")
            }
            let control = try await client.execute(uri: "/_control/stats", method: .get, headers: Headers.cookies([:], host: "sso.demo.test"))
            #expect(control.status == .ok)
        }
    }

    @Test("authorize refuses a return URL off the main host (no open redirect)")
    func openRedirect() async throws {
        let app = try DemoSite.buildApplication(configuration: .init())
        try await app.withLiveServer { client in
            for value in ["http%3A%2F%2Fevil.example%2Fsso%2Fcallback", "http%3A%2F%2Fdemo.test%2Fother", "javascript%3Aalert(1)", ""] {
                let response = try await client.execute(
                    uri: "/sso/authorize?return=\(value)",
                    method: .get,
                    headers: Headers.cookies([:], host: "sso.demo.test:8480")
                )
                #expect(response.status == .badRequest, "return=\(value)")
                #expect(response.location == nil)
            }
            let missing = try await client.execute(uri: "/sso/callback", method: .get, headers: Headers.cookies([:], host: "demo.test"))
            #expect(missing.status == .forbidden)
        }
    }

    @Test("Custom host names are honoured")
    func customHosts() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(mainHost: "app.example.test", ssoHost: "login.example.test"))
        try await app.withLiveServer { client in
            let start = try await client.execute(uri: "/sso/start", method: .get, headers: Headers.cookies([:], host: "app.example.test:9000"))
            #expect(start.location?.hasPrefix("http://login.example.test:9000/sso/authorize?return=http%3A%2F%2Fapp.example.test%3A9000%2F") == true)
            // The port comes from the Host header in any of its spellings; without one, the port the site listens on.
            let listening = try #require(client.baseURL.port)
            for (host, port) in [("[::1]:9100", 9100), ("127.0.0.1:9200", 9200), ("APP.example.test", listening)] {
                let response = try await client.execute(uri: "/sso/start", method: .get, headers: Headers.cookies([:], host: host))
                #expect(response.location?.hasPrefix("http://login.example.test:\(port)/sso/authorize?") == true, "Host: \(host)")
            }
        }
    }
}
