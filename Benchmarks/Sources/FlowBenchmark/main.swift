// The flow engine's own cost per login, without a network: the demo site's 3-request login (the same site
// file as LoginBenchmark) run against an HTTPClient that answers at once with recorded demo-site responses
// (Fixtures/demo-login). What remains is everything SessionKeeper adds on top of libcurl: templating, the
// cookie jar, HTML parsing and XPath, expectations, request building. One task, one thread: the figure is
// CPU per login.
//
// usage: FlowBenchmark [LOGINS]      (default 20000)
import CookieJar
import Foundation
import HTTPTransport
import LoginBenchmarkSupport
import LoginFlow
import SiteConfig

/// Answers like the demo site: a login page with a fresh CSRF token, a 303 with the session cookie, the
/// account as JSON.
struct RecordedDemoSite: HTTPClient {
    let base: URL
    let loginPage: Data
    let account: Data

    /// Reads the recorded bodies from `Benchmarks/Fixtures/demo-login`.
    init(base: URL) throws {
        self.base = base
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fixtures/demo-login").standardized
        loginPage = try Data(contentsOf: fixtures.appendingPathComponent("login.html"))
        account = try Data(contentsOf: fixtures.appendingPathComponent("me.json"))
    }

    func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse {
        let common: [(String, String)] = [("Cache-Control", "no-store"), ("Date", "Sat, 21 Nov 2026 14:58:02 GMT"), ("Server", "demo-site")]
        switch (request.method, request.url.path) {
        case ("GET", "/login"):
            return HTTPResponse(
                status: 200, url: request.url,
                headers: HTTPHeaders([("Content-Type", "text/html; charset=utf-8")] + common + [
                    ("Set-Cookie", "demo_csrf=bXs5-cwGiMl_NJHmEL8yWeSYXCDmlBbIqP-mxFYe-Eo.zuwzlaRmg__Em-6VeoloTHXErAs5_RCSbnQsvH__c_w; Path=/; HttpOnly; SameSite=Strict"),
                    ("Content-Length", "\(loginPage.count)"),
                ]),
                body: loginPage, httpVersion: "1.1", duration: .microseconds(100))
        case ("POST", "/login"):
            return HTTPResponse(
                status: 303, url: request.url,
                headers: HTTPHeaders(common + [
                    ("Set-Cookie", "demo_session=1w--Z7cKDQtIA3IPB7CnmUCAanmOK9SUYMl6QzryY1U; Path=/; HttpOnly; SameSite=Lax; Max-Age=3600"),
                    ("Content-Length", "0"), ("Location", "/account"),
                ]),
                body: Data(), httpVersion: "1.1", duration: .microseconds(100))
        default:
            return HTTPResponse(
                status: 200, url: request.url,
                headers: HTTPHeaders([("Content-Type", "application/json")] + common + [("Content-Length", "\(account.count)")]),
                body: account, httpVersion: "1.1",
                duration: .microseconds(100))
        }
    }
}

let logins = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20000 : 20000
let site = try demoLoginSite(baseURL: "http://127.0.0.1:8480")
let engine = FlowEngine(client: try RecordedDemoSite(base: site.baseURL), credentials: LiteralCredentials(site: site))

/// Runs off the main actor, so a login costs no hop between the main thread and Swift's pool.
func measure(_ engine: FlowEngine, _ site: SiteDefinition, logins: Int) async throws -> [Double] {
    // Warm-up: caches of the engine, libxml2's parser contexts.
    for _ in 0..<200 { _ = try await engine.login(site, storage: CookieStorage(acceptPolicy: .always)) }
    var samples: [Double] = []
    for _ in 0..<5 {
        let before = cpuSeconds()
        for _ in 0..<(logins / 5) { _ = try await engine.login(site, storage: CookieStorage(acceptPolicy: .always)) }
        samples.append((cpuSeconds() - before) / Double(logins / 5) * 1e6)
    }
    return samples
}

var samples = try await Task.detached { try await measure(engine, site, logins: logins) }.value
samples.sort()
print(String(format: "{\"client\":\"flow-engine-only\",\"logins\":%d,\"cpu_us_per_login_median\":%.2f,\"min\":%.2f,\"max\":%.2f}", logins, samples[2], samples[0], samples[4]))
