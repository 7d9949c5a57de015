import DemoSite
import Foundation
import HTTPTypes
import HTTPTypes
import NIOCore
import Locking
import Testing

@Suite("The site over real sockets")
struct LiveServerTests {
    @Test("A password login over a live socket")
    func liveLogin() async throws {
        let app = try DemoSite.buildApplication(configuration: .init(port: 0))
        try await app.withLiveServer { client in
            let steps = LoginSteps(client: client)
            let session = try await steps.logIn()
            let me = try await steps.me(session: session)
            #expect(me.status == .ok)
            #expect((try me.json()["user"] as? [String: Any])?["name"] as? String == "alice")
        }
    }

    @Test("start() binds 127.0.0.1 port 0, serves both host names, logs no secrets, and stop() closes the port")
    func startAndStop() async throws {
        let log = Locked<[DemoSite.RequestLogEntry]>([])
        let password = "live-Passw0rd-7731"
        let server = try await DemoSite.start(
            configuration: .init(host: "127.0.0.1", port: 0, password: password),
            requestLog: { entry in log.withLock { $0.append(entry) } }
        )
        #expect(server.port > 0)
        #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
        let port = server.port

        let secrets = try await SiteClient.with(port: port) { client in
            let main = "demo.test:\(port)"
            let page = try await client.execute(uri: "/login", method: .get, authority: main)
            let csrf = try #require(page.cookie("demo_csrf")).value
            var headers = HTTPFields()
            headers[.contentType] = "application/x-www-form-urlencoded"
            headers[.cookie] = "demo_csrf=\(csrf)"
            let login = try await client.execute(
                uri: "/login", method: .post, authority: main, headers: headers, body: formBody(["csrf": csrf, "username": "alice", "password": password]))
            #expect(login.status == .seeOther)
            let session = try #require(login.cookie("demo_session")).value

            let start = try await client.execute(uri: "/sso/start", method: .get, authority: main)
            let authorize = try #require(start.headers[.location].flatMap(URLComponents.init(string:)))
            #expect(authorize.host == "sso.demo.test")
            #expect(authorize.port == port, "the redirect names the port the client used")
            let granted = try await client.execute(
                uri: authorize.percentEncodedPath + "?" + (authorize.percentEncodedQuery ?? ""), method: .get, authority: "sso.demo.test:\(port)")
            #expect(granted.status == .found)
            let ssoID = try #require(granted.cookie("sso_id")).value
            let callback = try #require(granted.headers[.location].flatMap(URLComponents.init(string:)))
            let ticket = try #require(callback.queryItems?.first { $0.name == "ticket" }?.value)
            let done = try await client.execute(uri: "/sso/callback?ticket=\(ticket)", method: .get, authority: main)
            #expect(done.status == .seeOther)
            return [password, csrf, session, ssoID, ticket]
        }

        let entries = log.withLock { $0 }
        let lines = entries.map(\.description)
        #expect(lines.contains { $0.hasPrefix("POST /login 303 ") })
        #expect(lines.contains { $0.hasPrefix("GET /sso/callback 303 ") }, "the path is logged without its query")
        #expect(entries.count == 5, "one line per request")
        for line in lines {
            for secret in secrets { #expect(!line.contains(secret), "a log line holds a secret") }
        }

        await server.stop()
        await #expect(throws: (any Error).self) {
            try await SiteClient.with(port: port) { client in
                _ = try await client.get("/login")
            }
        }
    }

    @Test("start() reports a port already in use")
    func portInUse() async throws {
        let first = try await DemoSite.start(configuration: .init(port: 0))
        let error = await #expect(throws: DemoSite.StartError.self) {
            _ = try await DemoSite.start(configuration: .init(port: first.port))
        }
        #expect(error?.port == first.port)
        await first.stop()
    }
}
