@testable import Daemon
import Foundation
import Scheduler
import SiteConfig
import Testing

/// The keeper and the check it can trust, against the real demo site on the test's clock: a check that cannot
/// pass stops the logins, a `*` essential name drives refresh as the full name does, and `status` shows what
/// runs next.
@Suite(.serialized) struct KeeperCheckTests {
    typealias World = KeeperTests.World

    /// A check that fails right after the login logs the site in once, then waits for a person, saying why:
    /// a minute of `every: 1s` checks adds no login and no check.
    @Test func aCheckThatCanNeverPassNeedsAttentionAfterOneLogin() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            let wrong = try world.site(check: "check: {get: /api/me, expect: {body_contains: no such marker}, every: 1s}")
            await keeper.apply([wrong])
            try await KeeperTests.settle(keeper)
            let status = try #require(await keeper.status().first)
            #expect(status.phase == .needsAttention)
            #expect(status.attention?.reason == .checkNeverPasses)
            #expect(status.attention?.whatToDo.contains("sessionkeeper login demo --check") == true)
            #expect(status.lastError?.contains("body containing \"no such marker\"") == true, "\(status.lastError ?? "-")")
            #expect(status.nextRun == nil, "no login and no check planned")
            #expect(world.requests.count("POST /login") == 1)
            #expect(world.requests.count("GET /api/me") == 1)
            try await world.advance(keeper, by: .seconds(60), step: .seconds(1))
            #expect(world.requests.count("POST /login") == 1)
            #expect(world.requests.count("GET /api/me") == 1)
            // The session the login made is still served: it was never what was wrong.
            #expect(try await world.accepts(await keeper.record(for: "demo")))
            await keeper.stopAll()
        }
    }

    /// `essential: [demo_s*]` drives refresh exactly as `essential: [demo_session]`: the same expiry, the same
    /// next refresh, the same logins over the same time.
    @Test func aPrefixEssentialNameDrivesRefreshLikeTheFullName() async throws {
        var seen: [[String]] = []
        for essential in ["demo_session", "demo_s*"] {
            try await KeeperTests.withWorld(sessionMaxAge: 4) { world in
                let keeper = world.keeper()
                let site = try world.site(essential: essential)
                await keeper.apply([site])
                try await KeeperTests.settle(keeper)
                let status = try #require(await keeper.status().first)
                let expiresAt = try #require(status.expiresAt, "\(essential): the essential cookie's expiry")
                #expect(status.nextRefresh == expiresAt.addingTimeInterval(-2), "\(essential)")
                try await world.advance(keeper, by: .seconds(9))
                seen.append([
                    String(expiresAt.timeIntervalSince(world.clock.wall) + 9), status.nextRun.map { "\($0.kind)" } ?? "-",
                    String(world.requests.count("POST /login")),
                ])
                await keeper.stopAll()
            }
        }
        #expect(seen.count == 2 && seen[0] == seen[1], "\(seen)")
        #expect(seen.first?[2] != "1", "the sessions of 4 s were renewed: \(seen)")
    }

    /// A session restored at start is checked at once: revoked while no keeper ran, it is replaced before any
    /// check period passes.
    @Test func aRestoredSessionIsCheckedAtOnce() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let site = try world.site(check: "check: {get: /api/me, expect: {status: 200}, every: 1h}")
            let first = world.keeper()
            await first.apply([site])
            try await KeeperTests.settle(first)
            await first.stopAll()
            try await world.control("revoke-all")
            let second = world.keeper()
            await second.apply([site])
            try await KeeperTests.settle(second)
            #expect(world.requests.count("POST /login") == 2)
            #expect(try await world.accepts(await second.record(for: "demo")))
            #expect(await second.status().first?.phase == .valid)
            await second.stopAll()
        }
    }
}

extension KeeperTests.World {
    /// The demo site's file with its `check:` line replaced.
    func site(check: String) throws -> SiteDefinition {
        try site { $0.replacingOccurrences(of: "check: {get: /api/me, expect: {status: 200}, every: 1s}", with: check) }
    }

    /// The demo site's file with `essential` as its only essential cookie.
    func site(essential: String) throws -> SiteDefinition {
        try site { $0.replacingOccurrences(of: "cookies: {essential: [demo_session]}", with: "cookies: {essential: [\"\(essential)\"]}") }
    }

    private func site(_ change: (String) -> String) throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        return try loader.loadSite(
            text: change(KeeperTests.siteYAML(server.baseURL)), file: folder.appendingPathComponent("demo.yaml").path,
            config: loader.defaultConfig(directory: folder.path))
    }
}
