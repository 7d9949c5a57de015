// The flow engine's own cost per login, without a network: the demo site's 3-request login (the same site
// file as LoginBenchmark) run against an HTTPClient that answers at once with recorded demo-site responses.
// What remains is everything SessionKeeper adds on top of libcurl: templating, the cookie jar, HTML parsing
// and XPath, expectations, request building. One task, one thread: the figure is CPU per login.
//
// usage: FlowBenchmark [LOGINS]      (default 20000)
import CookieJar
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig

#if canImport(Glibc)
import Glibc
#endif

struct LiteralCredentials: CredentialProvider {
    let site: SiteDefinition
    func value(of name: String, site _: String) async throws -> String {
        guard case .literal(let value) = site.credential(named: name) else { throw CancellationError() }
        return value
    }
}

/// Answers like the demo site: a login page with a fresh CSRF token, a 303 with the session cookie, the
/// account as JSON.
struct RecordedDemoSite: HTTPClient {
    let base: URL
    let loginPage: String

    init(base: URL) {
        self.base = base
        let html = """
            <!DOCTYPE html>
            <html lang="en">
              <head>
                <meta charset="utf-8">
                <title>Sign in · Demo</title>
              </head>
              <body>
                <h1>Sign in</h1>
                <form id="login" method="post" action="/login">
                  <input type="hidden" name="csrf" value="np0MG1CIez8kTeAZvCDXfZqWwHaeTKKYfYlD46OHqo8.p4hSimVZILAa1O3gcstU5cTbGp8PaN91lSxGu7-R5Bc">
                  <label for="username">Username</label>
                  <input type="text" id="username" name="username" autocomplete="username">
                  <label for="password">Password</label>
                  <input type="password" id="password" name="password" autocomplete="current-password">
                  <button type="submit">Sign in</button>
                </form>
                <p><a href="/sso/start">Sign in with SSO</a></p>
              </body>
            </html>

            """
        loginPage = html
    }

    func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse {
        let common: [(String, String)] = [("Cache-Control", "no-store"), ("Date", "Sat, 21 Nov 2026 14:58:02 GMT"), ("Server", "demo-site")]
        switch (request.method, request.url.path) {
        case ("GET", "/login"):
            return HTTPResponse(
                status: 200, url: request.url,
                headers: HTTPHeaders([("Content-Type", "text/html; charset=utf-8")] + common + [
                    ("Set-Cookie", "demo_csrf=bXs5-cwGiMl_NJHmEL8yWeSYXCDmlBbIqP-mxFYe-Eo.zuwzlaRmg__Em-6VeoloTHXErAs5_RCSbnQsvH__c_w; Path=/; HttpOnly; SameSite=Strict"),
                    ("Content-Length", "722"),
                ]),
                body: Data(loginPage.utf8), httpVersion: "1.1", duration: .microseconds(100))
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
                headers: HTTPHeaders([("Content-Type", "application/json")] + common + [("Content-Length", "61")]),
                body: Data(#"{"expires_at":"2026-11-21T15:58:02Z","user":{"name":"alice"}}"#.utf8), httpVersion: "1.1",
                duration: .microseconds(100))
        }
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

let logins = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20000 : 20000
let siteText = """
    base_url: http://127.0.0.1:8480
    credentials:
      username: alice
      password: "wonderland"
    login:
      steps:
        - name: login page
          get: /login
          extract:
            csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}
        - name: submit
          post: /login
          form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
          follow_redirects: false
          expect: {status: 303, cookie: demo_session}
        - name: me
          get: /api/me
          expect: {status: 200}
    cookies:
      essential: [demo_session]
      accept: always
    """
let loader = ConfigurationLoader()
let config = loader.defaultConfig(directory: FileManager.default.currentDirectoryPath)
let site = try loader.loadSite(text: siteText, file: "bench.yaml", config: config)
let engine = FlowEngine(client: RecordedDemoSite(base: site.baseURL), credentials: LiteralCredentials(site: site))

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
