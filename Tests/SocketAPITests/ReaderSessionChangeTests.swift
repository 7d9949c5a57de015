import Daemon
import Foundation
import JSON
import Testing
import TestSupport

/// A reader cannot change whose session it is (SPEC section 10): the daemon's owner (root here, a manager) and a
/// reader (nobody, uid 65534, in the site's `access.uids`) use the egress route of one site, whose check names
/// the account. The site (`egress_upstream.py`) can switch a session's account (`/switch?to=NAME`), rotate it
/// (`/rotate`) and rotate it on every answer.
@Suite(.serialized) struct ReaderSessionChangeTests {
    /// Without learning: its exploring checks (the first 5 s after the login) would run beside the readers'
    /// requests, and on a site that ends the old session at every answer, whichever of two racing requests answers
    /// second carried a session already ended. These tests are about what a reader's own answer changes.
    static let checkingAccount = """
        check: {get: /me, expect: {status: 200, body_contains: '"account": "tester"'}, every: 1h}
        access: {uids: [65534]}
        learn: false
        """

    /// The account the owner's next request through the route is served as.
    static func account(_ world: SocketWorld, asNobody: Bool = false) async throws -> String? {
        let answer = try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/me", asNobody: asNobody)
        return try? JSONValue.parse(answer.body)["account"]?.plainText
    }

    @Test func aReadersAccountSwitchIsNotAdoptedAndItsRotationIs() async throws {
        try await EgressRouteTests.withUpstreamSite(extra: Self.checkingAccount) { world, upstream in
            #expect(try await Self.account(world) == "tester")
            let logins = try await upstream.stats().logins
            let first = EgressRouteTests.cookieValues(world, "up")

            // The reader switches the account: the site answers it, but the session served stays the owner's.
            let switched = try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/switch?to=mallory", asNobody: true)
            #expect(switched.status == 200, "\(switched.body)")
            #expect(switched.values("Set-Cookie").isEmpty, "the client never sees a cookie")
            #expect(try await Self.account(world) == "tester")
            #expect(try await Self.account(world, asNobody: true) == "tester")
            #expect(EgressRouteTests.cookieValues(world, "up") == first)
            #expect(try await waitUntil(.seconds(5)) {
                world.logs.all.contains { $0.contains("not adopted: the site's check did not pass on it") && $0.contains("site=up") }
            })

            // The reader's request rotates the session (the old one ends): the check passes on the new one, so
            // it is adopted, and the owner goes on without a login.
            for _ in 0..<3 {
                let rotated = try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/rotate", asNobody: true)
                #expect(rotated.status == 200, "\(rotated.body)")
                #expect(try await Self.account(world) == "tester")
            }
            #expect(EgressRouteTests.cookieValues(world, "up") != first, "the rotation was adopted")
            #expect(try await upstream.stats().logins == logins, "no login was needed")

            // The owner manages the site: its own switch is adopted as before.
            #expect(try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/switch?to=mallory").status == 200)
            #expect(try await Self.account(world) == "mallory")

            // No log line names a cookie value.
            let values = try await world.storedCookieValues(["up"]) + first
            #expect(!world.logs.all.contains { line in values.contains { line.contains($0) } })
        }
    }

    /// A site that rotates its session on every answer keeps working for its readers and its owner alike, with
    /// no login: each reader's answer is checked (the check's own answer rotates it once more, and that one is
    /// kept).
    @Test func aSiteThatRotatesOnEveryAnswerKeepsWorkingForEveryone() async throws {
        try await EgressRouteTests.withUpstreamSite(extra: Self.checkingAccount) { world, upstream in
            #expect(try await Self.account(world) == "tester")
            try await upstream.post("/_rotate_every_answer")
            let logins = try await upstream.stats().logins
            for round in 0..<3 {
                #expect(try await Self.account(world, asNobody: true) == "tester", "reader, round \(round)")
                let echo = try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/echo", asNobody: true)
                #expect(echo.status == 200, "reader's echo, round \(round)")
                #expect(try await Self.account(world) == "tester", "owner, round \(round)")
            }
            #expect(try await upstream.stats().logins == logins)
        }
    }

    /// Without a check nothing can tell a rotation from a switch: a reader's change of the essential cookies is
    /// never adopted (and a session the site ended is replaced by a login, as any dead session is).
    @Test func withoutACheckAReadersChangeIsNotAdopted() async throws {
        try await EgressRouteTests.withUpstreamSite(extra: "access: {uids: [65534]}") { world, _ async throws in
            let first = EgressRouteTests.cookieValues(world, "up")
            #expect(try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/switch?to=mallory", asNobody: true).status == 200)
            #expect(try await Self.account(world) == "tester")
            #expect(EgressRouteTests.cookieValues(world, "up") == first)
            #expect(world.logs.all.contains { $0.contains("not adopted: the site has no check to confirm it") })
            // A cookie that says nothing of whose session it is (not essential) is the site's bookkeeping: kept.
            #expect(try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/set-cookie", asNobody: true).status == 200)
            #expect(try await waitUntil(.seconds(5)) {
                world.keeper.servedNow("up", minValid: nil)?.record.cookies.contains { $0.name == "extra" } == true
            })
        }
    }
}
