import CookieJar
import Foundation
import Sessions
import SiteConfig
import Testing

@testable import Daemon
@testable import SocketAPI

/// `GET /v1/sites/NAME/cookies` for a session across two hosts (an app and its identity provider, each with a
/// `demo_session`): the header is one request's, `base_url`'s unless `url` says otherwise; formats with domains
/// keep every host (SPEC section 8, issue 41).
@Suite struct CookieAnswerHostTests {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)

    static func served() throws -> ServedSession {
        let loader = ConfigurationLoader(environment: [:])
        let folder = FileManager.default.temporaryDirectory.path
        let site = try loader.loadSite(
            text: "base_url: http://127.0.0.1:8480\nlogin: {steps: [{get: /oidc/start}]}\ncookies: {essential: [demo_session]}\n",
            file: folder + "/sso.yaml", config: loader.defaultConfig(directory: folder))
        let expires = now.addingTimeInterval(3600)
        let cookies = [
            Cookie(name: "demo_session", value: "app-session-value", domain: "127.0.0.1", expires: expires, created: now),
            Cookie(name: "demo_csrf", value: "app-csrf-value", domain: "127.0.0.1", expires: expires, created: now),
            Cookie(name: "demo_session", value: "provider-session-value", domain: "127.0.0.2", expires: expires, created: now),
        ]
        return ServedSession(site: site, record: SessionRecord(cookies: cookies, lastLogin: now, expiresAt: expires, userAgent: nil))
    }

    @Test func theHeaderIsBaseURLsUnlessAURLIsGiven() throws {
        let served = try Self.served()
        let header = CookieAnswer(served, format: .header, url: nil, now: { Self.now }).text
        // Booleans only: a failure message never shows a cookie value.
        let oneSession = header.components(separatedBy: "demo_session=").count == 2
        let theApps = header.contains("demo_session=app-session-value") && !header.contains("provider-session-value")
        #expect(oneSession && theApps)
        let provider = CookieAnswer(served, format: .header, url: URL(string: "http://127.0.0.2:8481/")!, now: { Self.now }).text
        let theProviders = provider == "demo_session=provider-session-value\n"
        #expect(theProviders)
        let netscape = CookieAnswer(served, format: .netscape, url: nil, now: { Self.now }).text
        let bothHosts = netscape.contains("provider-session-value") && netscape.contains("app-session-value")
        #expect(bothHosts)
    }
}
