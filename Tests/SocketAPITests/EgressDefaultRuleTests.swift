import Foundation
import JSON
import Testing
import TestSupport

/// SPEC section 10's default logged-out rule (issue 40): a site with no `egress:` block whose dead session answers a
/// redirect to its login page (as Django does: 302 to `/accounts/login/?next=...`; the demo site: 302 to
/// `/login?next=/account`) is recognized by the socket's proxy route and by `sessionkeeper request`.
extension EgressRouteTests {
    @Test func aDeadSessionsRedirectToTheLoginPageCausesOneLoginAndTheGetIsReplayedWithNoEgressBlock() async throws {
        let binary = try #require(builtProgram("sessionkeeper", override: "SESSIONKEEPER_BINARY"), "the sessionkeeper executable was not built")
        try await SocketWorld.withWorld { world in
            // Two sites on the demo site: a site's logged-out answers start a login at most every Keeper.rejectionInterval.
            await world.keeper.apply([try world.site("demo", yaml: Self.demoYAML(world)), try world.site("demo2", yaml: Self.demoYAML(world))])
            try await Self.waitValid(world, "demo")
            try await Self.waitValid(world, "demo2")
            try await world.serving(world.socketServer()) {
                let site = try JSONValue.parse(try await world.curl("/v1/sites/demo").body)
                #expect(site["egress"]?["logged_out"]?["login_paths"] == .array([.string("/login")]))

                // The socket's proxy route.
                _ = try await runProgram("/usr/bin/curl", ["-sS", "-X", "POST", world.server.baseURL.absoluteString + "/_control/revoke-all"])
                let page = try await Self.curl(world, "/v1/sites/demo/proxy/account")
                #expect(page.status == 200)
                #expect(page.body.contains("Welcome, alice"))
                #expect(page.values("SessionKeeper-Session").isEmpty, "replayed, not handed back")
                #expect(world.requests.count("POST /login") == 3, "the two sites' logins, then one for the dead session")
                #expect(world.requests.count("GET /account") == 2, "the GET, then its replay")

                // `sessionkeeper request`, a client of the same route, on the other site.
                _ = try await runProgram("/usr/bin/curl", ["-sS", "-X", "POST", world.server.baseURL.absoluteString + "/_control/revoke-all"])
                let requested = try await runProgram(binary, ["request", "demo2", "/account", "--socket", world.socketPath])
                #expect(requested.status == 0, "\(requested.errorText)")
                #expect(requested.outputText.contains("Welcome, alice"))
                #expect(world.requests.count("POST /login") == 4, "one login for the request")
                #expect(world.requests.count("GET /account") == 4)
            }
        }
    }
}
