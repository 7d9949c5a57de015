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

/// The keeper against the real demo site with lifetimes of a few seconds: real libcurl, a real vault.
@Suite(.serialized) struct KeeperTests {
    /// The demo site's login, checked every second, refreshed 2 s before its 4 s session ends.
    static func siteYAML(_ base: URL, extra: String = "") -> String {
        demoSiteLoginYAML(baseURL: base, extra: "refresh: {before_expiry: 2s, retry: {initial: 1s, max: 2s}}\n" + extra)
    }

    struct Credentials: CredentialProvider {
        var password: String
        func value(of name: String, site: String) async throws -> String { name == "username" ? "alice" : password }
    }

    struct World {
        var server: DemoSite.RunningServer
        var client: CurlHTTPClient
        var vault: Vault
        /// The demo site's requests by `METHOD path`.
        var requests: KeyCounter
        var folder: URL

        func site(password: String = DemoSite.Configuration.defaultPassword, extra: String = "") throws -> SiteDefinition {
            let loader = ConfigurationLoader(environment: [:])
            return try loader.loadSite(
                text: KeeperTests.siteYAML(server.baseURL, extra: extra), file: folder.appendingPathComponent("demo.yaml").path,
                config: loader.defaultConfig(directory: folder.path))
        }

        func keeper(
            password: String = DemoSite.Configuration.defaultPassword, wallClock: @escaping @Sendable () -> Date = { Date() }
        ) -> Keeper {
            let login = SiteLogin(
                client: client, store: VaultSessionStore(vault: vault), credentials: { _ in Credentials(password: password) },
                environment: [:])
            return Keeper(
                login: login, settings: SchedulerSettings(maxConcurrentLogins: 4, perHostInterval: .zero, jitter: 0), logger: Logger(label: "test"),
                wallClock: wallClock)
        }

        /// Whether the site accepts `record`'s cookies now.
        func accepts(_ record: SessionRecord?) async throws -> Bool {
            guard let record else { return false }
            let header = record.liveCookies(at: Date()).map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
            var headers = HTTPHeaders()
            headers.add(name: "Cookie", value: header)
            let response = try await client.send(
                HTTPRequest(url: server.baseURL.appendingPathComponent("api/me"), headers: headers), options: TransportOptions())
            return response.status == 200
        }

        func control(_ path: String) async throws {
            var url = server.baseURL
            url.append(path: "_control/\(path)")
            _ = try await client.send(HTTPRequest(method: "POST", url: URL(string: url.absoluteString.replacingOccurrences(of: "%3F", with: "?"))!), options: TransportOptions())
        }
    }

    static func withWorld(sessionMaxAge: Int = 4, _ body: (World) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keeper-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let requests = KeyCounter()
        let server = try await DemoSite.start(
            configuration: DemoSite.Configuration(port: 0, sessionMaxAge: sessionMaxAge), requestLog: { requests.add("\($0.method) \($0.path)") })
        let client = try CurlHTTPClient()
        let state = folder.appendingPathComponent("state").path
        let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: state + "/master.key"), createIfMissing: true)
        let world = World(server: server, client: client, vault: vault, requests: requests, folder: folder)
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
    /// in again at once instead of when the timer planned on the old clock fires, an hour later. (Only the keeper's
    /// clock moves here; the jar still stamps expiries on the real one.)
    @Test func aWallClockSetAheadIsNoticedAndEverySiteIsPlannedAgain() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let offset = Locked<TimeInterval>(0)
            let keeper = world.keeper(wallClock: { Date().addingTimeInterval(offset.withLock { $0 }) })
            let unchecked = try Self.siteWithoutCheck(world)
            #expect(unchecked.check == nil)
            await keeper.apply([try world.site(), unchecked])
            // Two first logins, generous for the suite in parallel under a sanitizer (it returns when they are done).
            #expect(try await waitUntil(.seconds(30)) { await keeper.status().allSatisfy { $0.phase == .valid } })
            let lastLogin = try #require(await keeper.record(for: "unchecked")?.lastLogin)
            offset.withLock { $0 = 86_400 }
            // Within seconds, not at the old timer an hour away; generous for a loaded machine, where the other
            // site's check and the login itself can each take seconds.
            #expect(try await waitUntil(.seconds(20)) { await keeper.record(for: "unchecked")?.lastLogin != lastLogin })
            await keeper.stopAll()
        }
    }

    /// The kernel's report that the clock was set (``WallClockWatcher``, wired in `KeeperService`) is acted on at
    /// once: with only a site without a check, whose next timer is an hour away, nothing else wakes the keeper,
    /// yet the report makes it log in again under the new wall time.
    @Test func aReportThatTheClockWasSetIsActedOnWithoutWaitingForATimer() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let offset = Locked<TimeInterval>(0)
            let keeper = world.keeper(wallClock: { Date().addingTimeInterval(offset.withLock { $0 }) })
            let unchecked = try Self.siteWithoutCheck(world)
            await keeper.apply([unchecked])
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().allSatisfy { $0.phase == .valid } })
            let lastLogin = try #require(await keeper.record(for: "unchecked")?.lastLogin)
            // A set that moves the clock by less than the tolerance (an NTP step) plans nothing again.
            offset.withLock { $0 = 0.5 }
            await keeper.wallClockWasSet()
            try await Task.sleep(for: .milliseconds(500))
            #expect(await keeper.record(for: "unchecked")?.lastLogin == lastLogin)
            // A day ahead: the session is over by the new wall time, and the site logs in again at once.
            offset.withLock { $0 = 86_400 }
            await keeper.wallClockWasSet()
            #expect(try await waitUntil(.seconds(20)) { await keeper.record(for: "unchecked")?.lastLogin != lastLogin })
            await keeper.stopAll()
        }
    }

    /// Issue 11's acceptance: over 30 seconds of 6-second sessions (refreshed 3 s before they end, so a
    /// login every 3 s), every sample of the served session is one the site accepts.
    @Test func theServedSessionIsAlwaysOneTheSiteAccepts() async throws {
        try await Self.withWorld(sessionMaxAge: 6) { world in
            let keeper = world.keeper()
            await keeper.apply([try world.site().refreshing(beforeExpiry: .seconds(3))])
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().first?.phase == .valid })
            var samples = 0
            var refused = 0
            var refusedFromBoard = 0
            let end = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < end {
                samples += 1
                if !(try await world.accepts(await keeper.record(for: "demo"))) { refused += 1 }
                // What the socket serves without asking the actor: the board's session, when it has one fit.
                if let served = keeper.servedNow("demo", minValid: nil), !(try await world.accepts(served.record)) {
                    refusedFromBoard += 1
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            await keeper.stopAll()
            #expect(refused == 0, "\(refused) of \(samples) samples were refused")
            #expect(refusedFromBoard == 0, "\(refusedFromBoard) of \(samples) sessions from the board were refused")
            // A login about every 3 s (the first one included), never a burst.
            let logins = world.requests.count("POST /login")
            // Each sample asks the site twice; on a loaded machine that is well under 150 in 30 s.
            #expect(samples >= 50, "\(samples) samples")
            #expect(logins >= 8 && logins <= 16, "\(logins) logins")
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
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().first?.phase == .valid })
            let fromKeeper = try await keeper.session(for: "demo", minValid: nil, wait: nil)
            let fromBoard = try #require(keeper.servedNow("demo", minValid: .seconds(60)))
            #expect(fromBoard.record == fromKeeper.record)
            #expect(fromBoard.site == fromKeeper.site)
            #expect(keeper.servedNow("demo", minValid: .seconds(7200)) == nil, "the session ends within the hour")
            try await world.control("revoke-all")
            #expect(try await waitUntil(.seconds(3)) {
                keeper.servedNow("demo", minValid: nil).map { $0.record.lastLogin > fromKeeper.record.lastLogin } ?? false
            })
            #expect(try await world.accepts(keeper.servedNow("demo", minValid: nil)?.record))
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
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().first?.phase == .valid })
            let first = try #require(await keeper.record(for: "demo"))
            try await world.control("revoke-all")
            #expect(try await waitUntil(.seconds(3)) { await keeper.record(for: "demo")?.lastLogin ?? .distantPast > first.lastLogin })
            #expect(try await world.accepts(await keeper.record(for: "demo")))
            await keeper.stopAll()
        }
    }

    @Test func whileTheSiteIsDownNoLoginIsTriedAndTheCookiesStay() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            await keeper.apply([try world.site()])
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().first?.phase == .valid })
            let record = await keeper.record(for: "demo")
            try await world.control("down?enabled=true")
            #expect(try await waitUntil(.seconds(4)) { await keeper.status().first?.siteDown == true })
            let loginsWhileDown = world.requests.count("POST /login")
            try await Task.sleep(for: .seconds(3))
            #expect(world.requests.count("POST /login") == loginsWhileDown)
            #expect(await keeper.record(for: "demo") == record)
            #expect(await keeper.status().first?.phase == .valid)
            try await world.control("down?enabled=false")
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().first?.siteDown == false })
            await keeper.stopAll()
        }
    }

    @Test func wrongCredentialsNeedAttentionAfterOneAttempt() async throws {
        try await Self.withWorld { world in
            let keeper = world.keeper(password: "not-the-password")
            await keeper.apply([try world.site()])
            #expect(try await waitUntil(.seconds(5)) { await keeper.status().first?.phase == .needsAttention })
            try await Task.sleep(for: .seconds(2))
            #expect(world.requests.count("POST /login") == 1)
            let status = try #require(await keeper.status().first)
            #expect(status.lastError?.contains("expected status 303") == true)
            #expect(status.lastError?.contains("not-the-password") == false)
            await keeper.stopAll()
        }
    }

    @Test func aRestartServesTheStoredSessionAndLogsNothingIn() async throws {
        try await Self.withWorld(sessionMaxAge: 3600) { world in
            let first = world.keeper()
            await first.apply([try world.site()])
            #expect(try await waitUntil(.seconds(5)) { await first.status().first?.phase == .valid })
            await first.stopAll()
            let logins = world.requests.count("POST /login")
            let second = world.keeper()
            await second.apply([try world.site()])
            #expect(await second.status().first?.phase == .valid)
            #expect(try await world.accepts(await second.record(for: "demo")))
            try await Task.sleep(for: .milliseconds(500))
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
