import Foundation
import TestSupport
import Testing
@testable import SiteConfig

/// `egress:` (SPEC section 10) as site files write it. Its errors are in the broken-files corpus.
@Suite struct EgressSectionTests {
    private let head = "base_url: https://wiki.example.com\nlogin: manual\n"

    @Test func withoutTheSectionEveryDefaultApplies() throws {
        let egress = try site(head).egress
        #expect(egress == EgressPolicy(), "login: manual and no check: nothing to derive")
        #expect(egress.loggedOut.statuses == [401])
        #expect(egress.loggedOut.urlPattern == nil)
        #expect(egress.loggedOut.bodyText == nil)
        #expect(egress.retry == .idempotent)
        #expect(egress.listen == nil)
    }

    /// SPEC section 10's default: without `egress.logged_out`, the login flow's first page and the check say what a
    /// dead session answers; a written rule replaces both.
    @Test func withoutALoggedOutRuleTheLoginPageAndTheCheckAreUsed() throws {
        let flow = """
            base_url: https://app.example.com
            login:
              steps:
                - {name: ask, prompt: {name: code, message: "Code?"}}
                - {name: page, get: "/accounts/login/?next=/", extract: {csrf: {regex: 'csrf=(\\w+)'}}}
                - {name: submit, post: /accounts/login/, form: {csrf: "{{ csrf }}", code: "{{ code }}"}}
            check: {get: "/api/me?full=1", expect: {status: [200, 204]}, follow_redirects: false}

            """
        let rule = try site(flow).egress.loggedOut
        #expect(rule.statuses == [401])
        #expect(rule.loginPaths == ["/accounts/login/"])
        #expect(rule.check == LoggedOutRule.CheckShape(method: "GET", pathAndQuery: "/api/me?full=1", statuses: [200, 204], followsRedirects: false))

        // A written rule wins, wholly.
        let written = try site(flow + "egress: {logged_out: {status: 403}}").egress.loggedOut
        #expect(written == LoggedOutRule(statuses: [403]))
        // A first page at "/" says nothing (a redirect home is no logout), nor one on another origin or with a placeholder.
        for url in ["/", "https://idp.example.com/login", "/login/{{ site.name }}"] {
            let other = try site("base_url: https://app.example.com\nlogin:\n  steps:\n    - {name: p, get: \"\(url)\", extract: {csrf: {regex: \"(x)\"}}}\n")
            #expect(other.egress.loggedOut.loginPaths.isEmpty, "\(url)")
        }
        // A check with expectations but no status accepts anything below 400.
        let noStatus = try site("base_url: https://app.example.com\nlogin: manual\ncheck: {get: /me, expect: {body_contains: alice}}\n")
        #expect(noStatus.egress.loggedOut.check?.accepts(302) == true)
        #expect(noStatus.egress.loggedOut.check?.accepts(403) == false)
    }

    @Test func theSpecExampleLoads() throws {
        let egress = try site(head + """
            egress:
              logged_out: {status: [401], url_matches: "/login", body_contains: "Please sign in"}   # any one of them
              retry: idempotent
              listen: 127.0.0.1:8481
            """).egress
        #expect(egress.loggedOut == LoggedOutRule(statuses: [401], urlPattern: "/login", bodyText: "Please sign in"))
        #expect(egress.retry == .idempotent)
        let listen = try #require(egress.listen)
        #expect(listen.host == "127.0.0.1")
        #expect(listen.port == 8481)
        #expect(listen.description == "127.0.0.1:8481")
        #expect(!listen.isIPv6)
        #expect(listen.mark?.line == 6)
        #expect(listen.mark?.column == 11)
    }

    @Test func statusIsOneOrAListAndAnEmptyListTestsNone() throws {
        #expect(try site(head + "egress: {logged_out: {status: 403}}").egress.loggedOut.statuses == [403])
        #expect(try site(head + "egress: {logged_out: {status: [401, 403, 401]}}").egress.loggedOut.statuses == [401, 403])
        // Without `status:` a rule with other tests still counts 401.
        #expect(try site(head + "egress: {logged_out: {url_matches: /signin}}").egress.loggedOut.statuses == [401])
        let none = try site(head + "egress: {logged_out: {status: [], body_contains: Session expired}}").egress.loggedOut
        #expect(none.statuses.isEmpty)
        #expect(none.bodyText == "Session expired")
    }

    @Test(arguments: [
        ("127.0.0.1:8481", "127.0.0.1", UInt16(8481), "127.0.0.1:8481"),
        ("127.5.6.7:1", "127.5.6.7", 1, "127.5.6.7:1"),
        ("\"[::1]:65535\"", "::1", 65535, "[::1]:65535"),
        ("\"[0:0:0:0:0:0:0:1]:9000\"", "::1", 9000, "[::1]:9000"),
    ])
    func loopbackAddressesAreAccepted(written: String, host: String, port: UInt16, description: String) throws {
        let listen = try #require(try site(head + "egress: {listen: \(written)}").egress.listen)
        #expect(listen.host == host)
        #expect(listen.port == port)
        #expect(listen.description == description)
        #expect(listen.isIPv6 == host.contains(":"))
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:http", "[::1]", "[::1]8481", "::ffff:127.0.0.1:80", "10.0.0.1:80", "[::]:80"])
    func otherListenValuesAreErrorsAtTheirValue(written: String) {
        let found = problems(head + "egress:\n  listen: \"\(written)\"\n")
        #expect(found.count == 1, "\(written): \(found)")
        #expect(found.first?.mark.line == 4)
        #expect(found.first?.mark.column == 11)
        #expect(found.first?.message.hasPrefix("egress.listen: ") == true)
    }

    @Test(arguments: [
        (EgressPolicy.Retry.idempotent, ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"], ["POST", "PATCH", "get", "PURGE"]),
        (.never, [], ["GET", "HEAD", "PUT", "POST"]),
        (.always, ["GET", "POST", "PATCH", "PURGE"], []),
    ])
    func retryDecidesReplays(retry: EgressPolicy.Retry, replayed: [String], notReplayed: [String]) {
        for method in replayed { #expect(retry.allowsReplay(of: method), "\(retry) \(method)") }
        for method in notReplayed { #expect(!retry.allowsReplay(of: method), "\(retry) \(method)") }
    }

    @Test func twoSitesCannotShareAListener() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.cleanUp() }
        let folder = temporary.path
        try FileManager.default.createDirectory(atPath: folder + "/sites", withIntermediateDirectories: true)
        try (head + "egress: {listen: 127.0.0.1:8481}\n").write(toFile: folder + "/sites/a.yaml", atomically: true, encoding: .utf8)
        try (head + "egress:\n  listen: 127.0.0.1:8481\n").write(toFile: folder + "/sites/b.yaml", atomically: true, encoding: .utf8)
        try (head + "egress: {listen: 127.0.0.1:8482}\n").write(toFile: folder + "/sites/c.yaml", atomically: true, encoding: .utf8)
        try (head + "egress: {listen: \"[::1]:8481\"}\n").write(toFile: folder + "/sites/d.yaml", atomically: true, encoding: .utf8)
        let result = loader.loadSites(config: loader.defaultConfig(directory: folder))
        #expect(result.sites.map(\.name) == ["a", "c", "d"])
        #expect(result.failures.flatMap(\.diagnostics).map(\.description) == [
            "\(folder)/sites/b.yaml:4:11: error: egress.listen: 127.0.0.1:8481 is already the listener of site 'a'"
        ])
    }
}
