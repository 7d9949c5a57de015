import CookieJar
import Credentials
import CurlTransport
import DemoSite
import Foundation
import Locking
import LoginFlow
import Sessions
import SiteConfig
import TestSupport
import Testing
import Vault

/// TOTP as sites check it (issue 40): the demo site with RFC 6238 TOTP that refuses a code used twice and allows no
/// clock drift, a real vault holding the secret, the login path the CLI and the daemon share, one wall clock that
/// the test moves by hand (the site's and the login's), so waiting for the next period takes no time.
@Suite struct OneTimeCodeTests {
    static let password = "totp-Pw-40"
    static let secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    /// Password, then a `prompt` step (`note`, sent as a header with the code), then the TOTP form.
    static func siteYAML(_ base: URL) -> String {
        """
        base_url: \(base.absoluteString)
        credentials:
          username: alice
          password: {env: DEMO_PASSWORD}
          otp: {totp: {secret: demo/totp}}
        login:
          steps:
            - name: login page
              get: /login
              extract: {csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}}
            - name: password
              post: /login
              form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
              expect: {status: 200, url_matches: "/login/totp$", cookie: demo_pending}
            - name: device note
              prompt: {name: note, message: "Which device is this?", timeout: 5m}
            - name: second factor
              form_from: {xpath: "//form[@id='totp']"}
              form: {code: "{{ credentials.otp }}"}
              headers: {X-Device-Note: "{{ note }}"}
              follow_redirects: false
              expect: {status: 303, cookie: demo_session}
        cookies: {essential: [demo_session]}
        """
    }

    /// Answers every prompt after moving the clock on by `lateness` seconds: a person answering late.
    struct LatePerson: PromptProvider {
        let clock: ManualWallClock
        let lateness: TimeInterval
        func answer(_ question: PromptQuestion) async throws(PromptUnanswered) -> String {
            clock.advance(by: lateness)
            return "laptop"
        }
    }

    struct World {
        var server: DemoSite.RunningServer
        var client: CurlHTTPClient
        var vault: Vault
        var site: SiteDefinition
        var clock: ManualWallClock
        var notices: Locked<[String]>

        /// The login path a process has: its own ledger of codes sent, the vault's session store, the shared clock.
        func login() -> SiteLogin {
            let vault = vault
            let clock = clock
            var login = SiteLogin(
                client: client, store: VaultSessionStore(vault: vault),
                credentials: { site in
                    ResolverCredentialProvider(
                        resolver: CredentialResolver(secrets: vault.background, environment: ["DEMO_PASSWORD": OneTimeCodeTests.password], clock: clock.function), site: site)
                },
                environment: ["DEMO_PASSWORD": OneTimeCodeTests.password], now: clock.function)
            login.sleep = { duration in clock.advance(by: Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) }
            return login
        }

        func run(_ login: SiteLogin, lateness: TimeInterval = 0) async throws -> SiteLoginResult {
            let notices = notices
            return try await login.run(site, events: { event in
                if case .flow(.notice(_, _, let message)) = event { notices.withLock { $0.append(message) } }
            }, prompts: LatePerson(clock: clock, lateness: lateness))
        }
    }

    /// `siteClockAhead`: how far the site's clock runs ahead of the login's.
    static func withWorld(start: Date, siteClockAhead: TimeInterval = 0, _ body: (World) async throws -> Void) async throws {
        let clock = ManualWallClock(start)
        let folder = try TemporaryFolder()
        let state = folder.path("state")
        let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: state + "/master.key"), createIfMissing: true)
        try vault.set(Array(secret.utf8), for: ItemReference(.credential, "demo/totp"))
        let server = try await DemoSite.start(
            configuration: .init(port: 0, password: password, totpSecret: secret, totpRejectReplay: true, totpDrift: 0),
            now: { clock.now.addingTimeInterval(siteClockAhead) })
        let client = try CurlHTTPClient()
        do {
            let loader = ConfigurationLoader(environment: [:])
            let site = try loader.loadSite(
                text: siteYAML(server.baseURL), file: folder.path("totp.yaml"), config: loader.defaultConfig(directory: folder.path))
            try await body(World(server: server, client: client, vault: vault, site: site, clock: clock, notices: Locked([])))
        } catch {
            client.shutdown()
            await server.stop()
            vault.close()
            throw error
        }
        client.shutdown()
        await server.stop()
        vault.close()
    }

    /// Five seconds into a 30-second period.
    static let periodStart = Date(timeIntervalSince1970: 1_800_000_000 - 1_800_000_000.truncatingRemainder(dividingBy: 30))

    @Test func twoLoginsWithinOnePeriodBothSucceed() async throws {
        try await Self.withWorld(start: Self.periodStart.addingTimeInterval(5)) { world in
            let login = world.login()
            let first = try await world.run(login)
            #expect(first.flow.essentialCookies.allSatisfy { $0.isSet })
            let period = Int64(Self.periodStart.timeIntervalSince1970) / 30
            #expect(first.record.oneTimeCodes == ["otp": period])
            #expect(world.notices.withLock { $0 }.isEmpty)

            // Three seconds later, the same process: the site would refuse this period's code again, so the login
            // waits for the next period (22 s on the hand-moved clock) and says so.
            world.clock.advance(by: 3)
            let second = try await world.run(login)
            #expect(second.flow.essentialCookies.allSatisfy { $0.isSet })
            #expect(second.record.oneTimeCodes == ["otp": period + 1])
            let notices = world.notices.withLock { $0 }
            #expect(notices.count == 1)
            #expect(notices.first?.contains("waiting 22 s for the next 30 s period of 'otp'") == true)

            // Another process (`login` after the daemon's run): its own ledger starts from the stored session's record.
            world.clock.advance(by: 2)
            let third = try await world.run(world.login())
            #expect(third.flow.essentialCookies.allSatisfy { $0.isSet })
            #expect(third.record.oneTimeCodes == ["otp": period + 2])
            #expect(world.notices.withLock { $0 }.count == 2)
            // No code in any message.
            let code = TOTPGeneratorProbe.code(Self.secret, counter: period + 2)
            #expect(!world.notices.withLock { $0 }.joined().contains(code))
        }
    }

    @Test func aPromptAnsweredThirtyFiveSecondsLateThenATOTPStepSucceeds() async throws {
        try await Self.withWorld(start: Self.periodStart.addingTimeInterval(10)) { world in
            let result = try await world.run(world.login(), lateness: 35)
            #expect(result.flow.essentialCookies.allSatisfy { $0.isSet })
            // The code is the period the request was built in (45 s after the period's start), not the login's start.
            let period = Int64(Self.periodStart.timeIntervalSince1970) / 30
            #expect(result.record.oneTimeCodes == ["otp": period + 1])
            #expect(world.notices.withLock { $0 }.isEmpty)
        }
    }

    @Test func aCodeRefusedAtThePeriodsEndIsTriedOnceWithTheNextPeriodsCode() async throws {
        // The site's clock runs 1.5 s ahead: a code computed a second before the period ends reaches a site already in
        // the next period, which allows no drift.
        try await Self.withWorld(start: Self.periodStart.addingTimeInterval(29), siteClockAhead: 1.5) { world in
            let result = try await world.run(world.login())
            #expect(result.flow.essentialCookies.allSatisfy { $0.isSet })
            let period = Int64(Self.periodStart.timeIntervalSince1970) / 30
            #expect(result.record.oneTimeCodes == ["otp": period + 1])
            let notices = world.notices.withLock { $0 }
            #expect(notices.first?.contains("the site refused the 'otp' code sent at the end of its period") == true)
            #expect(notices.count == 2)  // the retry, then the wait for the next period
            // The second-factor step ran twice: one refused code, one accepted.
            #expect(result.flow.steps.map(\.step) == ["login page", "password", "device note", "second factor"])
        }
    }

    @Test func aWrongCodeInTheMiddleOfAPeriodIsNotRetried() async throws {
        // The site's clock is a whole period ahead: every code is refused, and the refusal is not the period's end.
        try await Self.withWorld(start: Self.periodStart.addingTimeInterval(10), siteClockAhead: 30) { world in
            let error = await #expect(throws: SiteLoginError.self) { _ = try await world.run(world.login()) }
            guard case .flow(let flow)? = error else { Issue.record("not a flow error: \(String(describing: error))"); return }
            #expect(flow.step == "second factor")
            #expect(world.notices.withLock { $0 }.isEmpty)
        }
    }
}

/// The code of a period, through the Credentials module's generator, for checking that none is shown.
enum TOTPGeneratorProbe {
    static func code(_ base32: String, counter: Int64) -> String {
        TOTP.hotp(secret: Base32.decode(base32) ?? [], counter: UInt64(counter), digits: 6, algorithm: .sha1)
    }
}
