import Foundation
import Testing
@testable import SiteConfig

/// Entries of `cookies.essential` and `keep_on_login` (SPEC section 3): a name is `base_url`'s host's cookie, a
/// mapping names another host's; an entry that can match no cookie is refused where it is written.
@Suite struct CookieEntryTests {
    @Test func aNameAPrefixOrAnotherHostsCookie() throws {
        let built = try site("""
            base_url: http://127.0.0.2:8000
            login: {steps: [{get: /oidc/start}]}
            cookies:
              essential: [sessionid, DW*, {name: sessionid, domain: .IdP.example.com, path: /sso}]
              keep_on_login: [{name: sessionid, domain: 127.0.0.1}, device_id]
            """)
        #expect(built.cookies.essential == [
            CookieSelector("sessionid"), CookieSelector("DW*"), CookieSelector("sessionid", domain: "idp.example.com", path: "/sso"),
        ])
        #expect(built.cookies.keepOnLogin == .names([CookieSelector("sessionid", domain: "127.0.0.1"), "device_id"]))
        #expect(built.cookies.essential.map(\.description) == ["sessionid", "DW*", "sessionid (idp.example.com /sso)"])
    }

    @Test(arguments: [
        ("essential: [127.0.0.2/sessionid]",
         "4:15: cookies.essential: '127.0.0.2/sessionid' can match no cookie: to name a cookie of another host write {name: sessionid, domain: 127.0.0.2}"),
        ("essential: [{domain: idp.example.com}]", "4:15: cookies.essential: missing key 'name' in {name: NAME, domain: HOST}"),
        ("essential: [{name: sid, domain: \"https://idp.example.com/\"}]",
         "4:35: cookies.essential.domain: 'https://idp.example.com/' is not a host name"),
        ("essential: [{name: sid, path: sso}]", "4:33: cookies.essential.path: 'sso' is not a cookie path; it starts with '/'"),
        ("essential: [{name: sid, host: idp}]", "4:27: unknown key 'host'"),
        ("essential: [sid, sid]", "4:20: cookies.essential: 'sid' is listed twice"),
        ("keep_on_login: [{name: sid, domain: idp.test}, {name: sid, domain: IDP.test}]",
         "4:50: cookies.keep_on_login: 'sid (idp.test)' is listed twice"),
    ])
    func anEntryThatCanMatchNothingIsRefusedWhereItIsWritten(entry: String, expected: String) {
        let found = problems("""
            base_url: http://127.0.0.2:8000
            login: {steps: [{get: /oidc/start}]}
            cookies:
              \(entry)
            """).map { "\($0.mark.line):\($0.mark.column): \($0.message)" }
        #expect(found.contains { $0.hasPrefix(expected) }, "\(found)")
    }
}
