import CurlTransport
@testable import Daemon
import DemoSite
import Foundation
import HTTPTransport
import Locking
import LoginFlow
import Logging
import Scheduler
import Sessions
import SiteConfig
import TestSupport
import Testing
import Vault

/// The keeper against the real demo site (real libcurl, a real vault), on a clock the test moves: the keeper's
/// timers, the login path's and the jar's wall clock and the demo site's sessions all read one ``ManualClock``, so
/// sessions of a few seconds live and end without anyone waiting for them.
@Suite(.serialized) struct KeeperTests {
    /// The demo site's login, checked every second, refreshed 2 s before its session ends.
    static func siteYAML(_ base: URL, extra: String = "") -> String {
        demoSiteLoginYAML(baseURL: base, extra: "refresh: {before_expiry: 2s, retry: {initial: 1s, max: 2s}}\n" + extra)
    }

    struct Credentials: CredentialProvider {
        let password: Locked<String>
        func value(of name: String, site: String) async throws -> String { name == "username" ? "alice" : password.withLock { $0 } }
    }

    struct World {
        var server: DemoSite.RunningServer
        var client: CurlHTTPClient
        var vault: Vault
        var clock: ManualClock
        /// The demo site's requests by `METHOD path`.
        var requests: KeyCounter
        var folder: URL
        /// What the credential provider answers for `password`.
        var password: Locked<String>

        func site(extra: String = "", passwordSource: String? = nil) throws -> SiteDefinition {
            var yaml = KeeperTests.siteYAML(server.baseURL, extra: extra)
            if let passwordSource { yaml = yaml.replacingOccurrences(of: "{env: DEMO_PASSWORD}", with: passwordSource) }
            let loader = ConfigurationLoader(environment: [:])
            return try loader.loadSite(
                text: yaml, file: folder.appendingPathComponent("demo.yaml").path, config: loader.defaultConfig(directory: folder.path))
        }

        /// The login path every keeper of this world uses, and a test that stores a session as another process would.
        var login: SiteLogin {
            SiteLogin(
                client: client, store: VaultSessionStore(vault: vault), credentials: { [password] _ in Credentials(password: password) },
                environment: [:], now: { [clock] in clock.wall })
        }

        func keeper() -> Keeper {
            Keeper(
                login: login, settings: SchedulerSettings(maxConcurrentLogins: 4, perHostInterval: .zero, jitter: 0),
                logger: Logger(label: "test"), clock: clock, wallClock: { [clock] in clock.wall })
        }

        /// Whether the site accepts `record`'s cookies now.
        func accepts(_ record: SessionRecord?) async throws -> Bool {
            guard let record else { return false }
            let header = record.liveCookies(at: clock.wall).map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
            var headers = HTTPHeaders()
            headers.add(name: "Cookie", value: header)
            let response = try await client.send(
                HTTPRequest(url: server.baseURL.appendingPathComponent("api/me"), headers: headers), options: TransportOptions())
            return response.status == 200
        }

        func control(_ path: String) async throws {
            let url = try #require(URL(string: server.baseURL.absoluteString + "/_control/" + path))
            _ = try await client.send(HTTPRequest(method: "POST", url: url), options: TransportOptions())
        }

        /// Moves the clock on by `duration` in steps of `step`, letting the keeper finish what each step started.
        func advance(_ keeper: Keeper, by duration: Duration, step: Duration = .milliseconds(250)) async throws {
            var left = duration
            while left > .zero {
                let next = min(step, left)
                clock.advance(by: next)
                left -= next
                try await settle(keeper)
            }
        }
    }

    /// Waits (in real time, at most 30 s) until the keeper has nothing in flight and no timer overdue.
    static func settle(_ keeper: Keeper) async throws {
        let settled = try await waitUntil(.seconds(30)) { await keeper.isSettled }
        try #require(settled, "the keeper did not settle")
    }

    static func withWorld(sessionMaxAge: Int = 4, _ body: (World) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keeper-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let requests = KeyCounter()
        let clock = ManualClock()
        let server = try await DemoSite.start(
            configuration: DemoSite.Configuration(port: 0, sessionMaxAge: sessionMaxAge), now: { clock.wall },
            requestLog: { requests.add("\($0.method) \($0.path)") })
        let client = try CurlHTTPClient()
        let state = folder.appendingPathComponent("state").path
        let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: state + "/master.key"), createIfMissing: true)
        let world = World(
            server: server, client: client, vault: vault, clock: clock, requests: requests, folder: folder,
            password: Locked(DemoSite.Configuration.defaultPassword))
        do {
            try await body(world)
        } catch {
            vault.close()
            client.shutdown()
            await server.stop()
            throw error
        }
        vault.close()
        client.shutdown()
        await server.stop()
    }

    /// The demo site's definition without its check: nothing but its login timer (an hour away) wakes the keeper
    /// for it.
    static func siteWithoutCheck(_ world: World) throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        return try loader.loadSite(
            text: KeeperTests.siteYAML(world.server.baseURL).replacingOccurrences(of: "check: {get: /api/me, expect: {status: 200}, every: 1s}\n", with: ""),
            file: world.folder.appendingPathComponent("unchecked.yaml").path, config: loader.defaultConfig(directory: world.folder.path))
    }

    /// A wall clock set a day ahead (NTP after a long suspend) is noticed at the keeper's next wake (here the
    /// other site's check, every second): a site without a check, whose session the new wall time calls over, logs
    /// in again at once instead of when the timer planned on the old clock fires, an hour later.
    @Test func aWallClockSetAheadIsNoticedAndEverySiteIsPlannedAgain() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            let unchecked = try Self.siteWithoutCheck(world)
            #expect(unchecked.check == nil)
            await keeper.apply([try world.site(), unchecked])
            try await Self.settle(keeper)
            #expect(await keeper.status().allSatisfy { $0.phase == .valid })
            let lastLogin = try #require(await keeper.record(for: "unchecked")?.lastLogin)
            world.clock.setWall(by: 86_400)
            // The next check wakes the keeper within a second; the login is spread over one more second at most.
            try await world.advance(keeper, by: .seconds(3))
            #expect(await keeper.record(for: "unchecked")?.lastLogin != lastLogin)
            await keeper.stopAll()
        }
    }

    /// The kernel's report that the clock was set (``WallClockWatcher``, wired in `KeeperService`) is acted on at
    /// once: with only a site without a check, whose next timer is an hour away, nothing else wakes the keeper,
    /// yet the report makes it log in again under the new wall time.
    @Test func aReportThatTheClockWasSetIsActedOnWithoutWaitingForATimer() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            await keeper.apply([try Self.siteWithoutCheck(world)])
            try await Self.settle(keeper)
            let lastLogin = try #require(await keeper.record(for: "unchecked")?.lastLogin)
            // A set that moves the clock by less than the tolerance (an NTP step) plans nothing again.
            world.clock.setWall(by: 0.5)
            await keeper.wallClockWasSet()
            try await world.advance(keeper, by: .seconds(2))
            #expect(await keeper.record(for: "unchecked")?.lastLogin == lastLogin)
            // A day ahead: the session is over by the new wall time, and the site logs in again at once (spread
            // over the politeness window, at most 2 s), not at its old timer an hour away.
            world.clock.setWall(by: 86_400)
            await keeper.wallClockWasSet()
            try await world.advance(keeper, by: .seconds(2))
            #expect(await keeper.record(for: "unchecked")?.lastLogin != lastLogin)
            await keeper.stopAll()
        }
    }

    /// Issue 11's acceptance: over 30 seconds of 6-second sessions (refreshed 3 s before they end, so a
    /// login every 3 s), every sample of the served session is one the site accepts.
    @Test func theServedSessionIsAlwaysOneTheSiteAccepts() async throws {
        try await Self.withWorld(sessionMaxAge: 6) { world in
            let keeper = world.keeper()
            await keeper.apply([try world.site().refreshing(beforeExpiry: .seconds(3))])
            try await Self.settle(keeper)
            #expect(await keeper.status().first?.phase == .valid)
            var samples = 0
            var refused = 0
            var refusedFromBoard = 0
            for _ in 0..<150 {
                try await world.advance(keeper, by: .milliseconds(200))
                samples += 1
                if !(try await world.accepts(await keeper.record(for: "demo"))) { refused += 1 }
                // What the socket serves without asking the actor: the board's session, when it has one fit.
                if let served = keeper.servedNow("demo", minValid: nil), !(try await world.accepts(served.record)) {
                    refusedFromBoard += 1
                }
            }
            await keeper.stopAll()
            #expect(refused == 0, "\(refused) of \(samples) samples were refused")
            #expect(refusedFromBoard == 0, "\(refusedFromBoard) of \(samples) sessions from the board were refused")
            // A login every 3 s (the first one included), never a burst.
            let logins = world.requests.count("POST /login")
            #expect(logins >= 9 && logins <= 12, "\(logins) logins")
        }
    }

    /// The board the socket reads without an actor hop answers as the Keeper does: the same session while it
    /// is fit, nothing for a `min_valid` beyond its expiry, the new session after a login, nothing for a site
    /// that is gone.
    @Test func theBoardServesWhatTheKeeperServes() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            #expect(keeper.servedNow("demo", minValid: nil) == nil)
            await keeper.apply([try world.site()])
            try await Self.settle(keeper)
            let fromKeeper = try await keeper.session(for: "demo", minValid: nil, wait: nil)
            let fromBoard = try #require(keeper.servedNow("demo", minValid: .seconds(60)))
            #expect(fromBoard.record == fromKeeper.record)
            #expect(fromBoard.site == fromKeeper.site)
            #expect(keeper.servedNow("demo", minValid: .seconds(7200)) == nil, "the session ends within the hour")
            try await world.control("revoke-all")
            try await world.advance(keeper, by: .seconds(1))
            let after = try #require(keeper.servedNow("demo", minValid: nil))
            #expect(after.record.lastLogin > fromKeeper.record.lastLogin)
            #expect(try await world.accepts(after.record))
            await keeper.apply([])
            #expect(keeper.servedNow("demo", minValid: nil) == nil)
            #expect(keeper.board.entry(of: "demo") == nil)
            await keeper.stopAll()
        }
    }

    @Test func aRevokedSessionIsReplacedWithinOneCheckPeriod() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            await keeper.apply([try world.site()])
            try await Self.settle(keeper)
            let first = try #require(await keeper.record(for: "demo"))
            try await world.control("revoke-all")
            try await world.advance(keeper, by: .seconds(1), step: .seconds(1))
            #expect(await keeper.record(for: "demo")?.lastLogin ?? .distantPast > first.lastLogin)
            #expect(try await world.accepts(await keeper.record(for: "demo")))
            await keeper.stopAll()
        }
    }

    @Test func whileTheSiteIsDownNoLoginIsTriedAndTheCookiesStay() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            await keeper.apply([try world.site()])
            try await Self.settle(keeper)
            let record = await keeper.record(for: "demo")
            try await world.control("down?enabled=true")
            try await world.advance(keeper, by: .seconds(1))
            #expect(await keeper.status().first?.siteDown == true)
            let loginsWhileDown = world.requests.count("POST /login")
            try await world.advance(keeper, by: .seconds(10))
            #expect(world.requests.count("POST /login") == loginsWhileDown)
            #expect(await keeper.record(for: "demo") == record)
            #expect(await keeper.status().first?.phase == .valid)
            try await world.control("down?enabled=false")
            // The next check comes within retry.max (2 s).
            try await world.advance(keeper, by: .seconds(2))
            #expect(await keeper.status().first?.siteDown == false)
            await keeper.stopAll()
        }
    }

    /// One refused login and the site waits for a person: no second login, and, with no session, no check either
    /// (issue 25: every period's check of nothing logged a warning).
    @Test func wrongCredentialsNeedAttentionAfterOneAttemptAndNothingIsProbed() async throws {
        try await Self.withWorld { world in
            world.password.withLock { $0 = "not-the-password" }
            let keeper = world.keeper()
            await keeper.apply([try world.site()])
            try await Self.settle(keeper)
            #expect(await keeper.status().first?.phase == .needsAttention)
            try await world.advance(keeper, by: .seconds(30), step: .seconds(1))
            #expect(world.requests.count("POST /login") == 1)
            #expect(world.requests.count("GET /api/me") == 0)
            let status = try #require(await keeper.status().first)
            #expect(status.lastError?.contains("expected status 303") == true)
            #expect(status.lastError?.contains("not-the-password") == false)
            await keeper.stopAll()
        }
    }

    /// A secret the site reads changed (what ``VaultChangeFeed`` reports after `secret set`): the site waiting for a
    /// person logs in with it at once. A change to a secret the site does not read changes nothing.
    @Test func aChangedSecretLogsANeedsAttentionSiteInAtOnce() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            world.password.withLock { $0 = "not-the-password" }
            let keeper = world.keeper()
            let site = try world.site(passwordSource: "{secret: demo/password}")
            #expect(Keeper.secretNames(of: site) == ["demo/password"])
            await keeper.apply([site])
            try await Self.settle(keeper)
            #expect(await keeper.status().first?.phase == .needsAttention)
            world.password.withLock { $0 = DemoSite.Configuration.defaultPassword }
            await keeper.storeChanged([.secret(name: "other/password")])
            try await Self.settle(keeper)
            #expect(await keeper.status().first?.phase == .needsAttention)
            await keeper.storeChanged([.secret(name: "demo/password")])
            try await Self.settle(keeper)
            #expect(await keeper.status().first?.phase == .valid)
            #expect(world.requests.count("POST /login") == 2)
            #expect(try await world.accepts(await keeper.record(for: "demo")))
            await keeper.stopAll()
        }
    }

    /// A session another process stored (`sessionkeeper login`) is served as soon as the store reports it, not at the
    /// next check; the daemon's own writes, reported the same way, change nothing.
    @Test func aSessionStoredElsewhereIsServedAtOnce() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            let site = try world.site()
            await keeper.apply([site])
            try await Self.settle(keeper)
            let served = try #require(await keeper.record(for: "demo"))
            await keeper.storeChanged([.session(site: "demo")])
            #expect(await keeper.record(for: "demo") == served)
            // Only the wall clock moves (less than the keeper's jump tolerance), so no timer of the keeper fires and
            // nothing but the report can bring the new session in.
            world.clock.setWall(by: 1)
            let other = try await world.login.run(site).record
            #expect(other.lastLogin > served.lastLogin)
            await keeper.storeChanged([.session(site: "demo")])
            #expect(await keeper.record(for: "demo") == other)
            #expect(keeper.servedNow("demo", minValid: nil)?.record == other)
            try await Self.settle(keeper)
            #expect(world.requests.count("POST /login") == 2, "the keeper itself logged in once")
            await keeper.stopAll()
        }
    }

    @Test func aRestartServesTheStoredSessionAndLogsNothingIn() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let first = world.keeper()
            await first.apply([try world.site()])
            try await Self.settle(first)
            #expect(await first.status().first?.phase == .valid)
            await first.stopAll()
            let logins = world.requests.count("POST /login")
            let second = world.keeper()
            await second.apply([try world.site()])
            #expect(await second.status().first?.phase == .valid)
            #expect(try await world.accepts(await second.record(for: "demo")))
            try await world.advance(second, by: .seconds(2))
            #expect(world.requests.count("POST /login") == logins)
            await second.stopAll()
        }
    }
}

extension SiteDefinition {
    /// The same site, logging in again `beforeExpiry` before its first essential cookie expires.
    func refreshing(beforeExpiry: Duration) -> SiteDefinition {
        var copy = self
        copy.refresh.beforeExpiry = beforeExpiry
        return copy
    }
}
