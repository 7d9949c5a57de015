import CurlTransport
@testable import Daemon
import DemoSite
import Foundation
import HTTPTransport
import JSON
import Locking
import Scheduler
import Sessions
import SiteConfig
import TestSupport
import Testing

/// The keeper's `prompt` steps (SPEC section 12) against the real demo site: its `/login/code` sign-in sends a
/// one-time code out of band (`/_control/sent-code` shows it, as the person's phone would), and the login waits
/// in waiting-for-person until the code is answered through ``Keeper/answer(_:prompt:value:)``.
@Suite(.serialized) struct KeeperPromptTests {
    static func codeSiteYAML(_ base: URL, timeout: String = "30s") -> String {
        demoSiteCodeLoginYAML(baseURL: base, timeout: timeout, extra: "refresh: {before_expiry: 1m}")
    }

    static func site(_ world: KeeperTests.World, timeout: String = "30s") throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        return try loader.loadSite(
            text: codeSiteYAML(world.server.baseURL, timeout: timeout), file: world.folder.appendingPathComponent("coded.yaml").path,
            config: loader.defaultConfig(directory: world.folder.path))
    }

    /// The code the demo site sent last, read as the person reads their phone.
    static func sentCode(_ world: KeeperTests.World) async throws -> String {
        let url = try #require(URL(string: world.server.baseURL.absoluteString + "/_control/sent-code"))
        let response = try await world.client.send(HTTPRequest(url: url), options: TransportOptions())
        let code = try JSONValue.parse(String(decoding: response.body, as: UTF8.self))["code"]?.plainText
        return try #require(code)
    }

    /// Waits (real time) until the keeper says the site waits for a person.
    static func waitForPrompt(_ keeper: Keeper) async throws -> Keeper.SiteStatus {
        let waiting = try await waitUntil(.seconds(30)) { await keeper.status().first?.phase == .waitingForPerson }
        let status = await keeper.status()
        try #require(waiting, "the site never waited for a person: \(status)")
        return try #require(status.first)
    }

    /// The state changes published, as they came.
    final class Changes: Sendable {
        let seen = Locked<[SiteStateChange]>([])
        func collect(_ events: AsyncStream<KeeperEvent>) -> Task<Void, Never> {
            Task {
                for await event in events {
                    if case .state(let change) = event { seen.withLock { $0.append(change) } }
                }
            }
        }
        var all: [SiteStateChange] { seen.withLock { $0 } }
    }

    @Test func aLoginWaitsForAPersonsAnswerAndUsesIt() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            let changes = Changes()
            let collector = changes.collect(await keeper.events())
            await keeper.apply([try Self.site(world)])
            let status = try await Self.waitForPrompt(keeper)
            #expect(status.prompt?.name == "sms_code")
            #expect(status.prompt?.message == "Code sent to the phone ending 42")
            #expect(status.prompt?.expiresAt == world.clock.wall.addingTimeInterval(30))

            // An answer to another prompt, or for a site that does not wait, is refused.
            await #expect(throws: ClientRequestError.noPrompt("coded", asked: "email_code", waiting: "sms_code")) {
                try await keeper.answer("coded", prompt: "email_code", value: "000000")
            }
            await #expect(throws: ClientRequestError.unknownSite("nowhere")) { try await keeper.answer("nowhere", prompt: nil, value: "1") }

            let code = try await Self.sentCode(world)
            #expect(try await keeper.answer("coded", prompt: "sms_code", value: code) == "sms_code")
            let valid = try await waitUntil(.seconds(30)) { await keeper.status().first?.phase == .valid }
            let validStatus = await keeper.status()
            #expect(valid, "\(validStatus)")
            #expect(try await world.accepts(await keeper.record(for: "coded")))
            // Nothing waits any more.
            await #expect(throws: ClientRequestError.noPrompt("coded", asked: nil, waiting: nil)) {
                try await keeper.answer("coded", prompt: nil, value: code)
            }
            await keeper.stopAll()
            // stopAll ends the event streams: the collector has every event once it returns.
            await collector.value
            let phases = changes.all.map(\.to)
            #expect(phases == [.waitingForPerson, .loggingIn, .valid], "\(changes.all)")
            let waiting = try #require(changes.all.first)
            #expect(waiting.prompt?.name == "sms_code" && waiting.message == "Code sent to the phone ending 42")
        }
    }

    /// Nobody answers within the prompt's timeout (on the keeper's clock): the login fails, the site needs
    /// attention for that reason, and the change says so.
    @Test func aPromptNobodyAnswersLeavesTheSiteNeedingAttention() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            let changes = Changes()
            let collector = changes.collect(await keeper.events())
            await keeper.apply([try Self.site(world, timeout: "20s")])
            _ = try await Self.waitForPrompt(keeper)
            try await world.advance(keeper, by: .seconds(21), step: .seconds(1))
            let attention = try await waitUntil(.seconds(30)) { await keeper.status().first?.phase == .needsAttention }
            let status = await keeper.status()
            #expect(attention, "\(status)")
            #expect(status.first?.lastError?.contains("nobody answered within 20s") == true, "\(status)")
            // A late answer finds nothing waiting.
            await #expect(throws: ClientRequestError.self) { try await keeper.answer("coded", prompt: nil, value: "123456") }
            await keeper.stopAll()
            // stopAll ends the event streams: the collector has every event once it returns.
            await collector.value
            let last = try #require(changes.all.last)
            #expect(last.to == .needsAttention && last.reason == .promptTimedOut, "\(changes.all)")
        }
    }

    /// Refused credentials are published with their reason and a message without the site's page.
    @Test func refusedCredentialsArePublishedWithTheirReason() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            world.password.withLock { $0 = "wrong-password-for-the-test" }
            let keeper = world.keeper()
            let changes = Changes()
            let collector = changes.collect(await keeper.events())
            await keeper.apply([try world.site()])
            let attention = try await waitUntil(.seconds(30)) { await keeper.status().first?.phase == .needsAttention }
            #expect(attention)
            await keeper.stopAll()
            // stopAll ends the event streams: the collector has every event once it returns.
            await collector.value
            let change = try #require(changes.all.last)
            #expect(change.reason == .credentialsRefused, "\(changes.all)")
            let message = try #require(change.message)
            #expect(message.contains("step 'submit'") && !message.contains("last response") && !message.contains("wrong-password"))
        }
    }

    /// A `login: manual` site without a session needs a person from its start: that is published once, with its
    /// reason, as a change from the placeholder state, so the notifiers tell it once.
    @Test func aSiteThatNeedsAPersonFromItsStartIsPublishedOnce() async throws {
        try await KeeperTests.withWorld(sessionMaxAge: 3600) { world in
            let keeper = world.keeper()
            let changes = Changes()
            let collector = changes.collect(await keeper.events())
            let loader = ConfigurationLoader(environment: [:])
            let manual = try loader.loadSite(
                text: "base_url: \(world.server.baseURL.absoluteString)\nlogin: manual\n", file: world.folder.appendingPathComponent("manual.yaml").path,
                config: loader.defaultConfig(directory: world.folder.path))
            await keeper.apply([manual])
            try await KeeperTests.settle(keeper)
            #expect(await keeper.status().first?.phase == .needsAttention)
            let published = try await waitUntil(.seconds(5)) { !changes.all.isEmpty }
            #expect(published)
            // Applying the same site again changes nothing and tells nothing.
            await keeper.apply([manual])
            try await Task.sleep(for: .milliseconds(200))
            await keeper.stopAll()
            // stopAll ends the event streams: the collector has every event once it returns.
            await collector.value
            #expect(changes.all.count == 1, "\(changes.all)")
            let change = try #require(changes.all.first)
            #expect(change.to == .needsAttention && change.reason == .manualSessionDied, "\(change)")
        }
    }
}
