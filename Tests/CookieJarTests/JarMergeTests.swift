import Foundation
import Testing
@testable import CookieJar

/// `login --jar FILE`'s merge (``JarMerge``): the login's cookies replace the site's in a jar that holds other sites'
/// cookies too, as `curl -b F -c F` leaves the file.
@Suite struct JarMergeTests {
    static let now = Fixtures.suiteNow

    /// Cookies as a response from `source` sets them.
    static func cookies(_ headers: [String], from source: String) -> [Cookie] {
        let storage = CookieStorage(acceptPolicy: .always, limits: CookieLimits(), clock: { now })
        storage.setCookies(fromHeaders: headers, for: url(source), mainDocumentURL: nil)
        return storage.allCookies
    }

    @Test func theSitesOldSessionGoesOtherSitesCookiesStayInTheirOrder() {
        let file = Self.cookies(["other=1; Max-Age=3600"], from: "https://other.example/")
            + Self.cookies(["old_session=x; Max-Age=3600", "remembered=y; Max-Age=3600; Domain=wiki.example"], from: "https://wiki.example/")
            + Self.cookies(["expired=z; Max-Age=1"], from: "https://third.example/")
            + Self.cookies(["last=2; Max-Age=3600"], from: "https://fourth.example/")
        let login = Self.cookies(["session=new; Max-Age=3600"], from: "https://wiki.example/")
        let merged = JarMerge.merge(login, into: file, site: url("https://wiki.example/"), now: Self.now.addingTimeInterval(10))
        // The old host-only session is carried to the site, the domain cookie shares the login's domain: both go; the
        // expired one goes as curl drops it; the rest keep their order, the login's last.
        #expect(merged.map(\.name) == ["other", "last", "session"])
    }
}
