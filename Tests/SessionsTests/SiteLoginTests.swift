import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import Locking
import LoginFlow
import Sessions
import SiteConfig
import TestSupport
import Testing
import Vault

/// "Log in one site" end to end: real libcurl against a Python login form on 127.0.0.1, a real vault in
/// a private temporary folder, site files loaded by SiteConfig as a user writes them.
@Suite struct SiteLoginTests {
    static let password = "s3cret-Pa55"

    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    /// A site file for the redirecting login form, with `extra` YAML appended.
    static func siteYAML(port: Int, extra: String = "") -> String {
        """
        base_url: http://127.0.0.1:\(port)
        credentials:
          username: alice
          password: {env: SITE_PASSWORD}
        login:
          steps:
            - name: login page
              get: /login
              extract:
                csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}
            - name: submit
              post: /login
              form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
              follow_redirects: false
              expect: {status: 303, cookie: sid}
        \(extra)
        """
    }

    /// Everything a test needs: the server, a client, a vault and a folder; all stopped afterwards.
    struct World {
        var server: PythonServer
        var client: CurlHTTPClient
        var vault: Vault
        var folder: URL

        func site(_ extra: String = "", cookies: String = "cookies: {essential: [sid]}") throws -> SiteDefinition {
            let loader = ConfigurationLoader(environment: [:])
            let config = loader.defaultConfig(directory: folder.path)
            return try loader.loadSite(
                text: SiteLoginTests.siteYAML(port: server.port, extra: cookies + "\n" + extra),
                file: folder.appendingPathComponent("redirecting.yaml").path, config: config)
        }

        var login: SiteLogin {
            SiteLogin(
                client: client, store: VaultSessionStore(vault: vault),
                credentials: { _ in EnvironmentCredentials(password: SiteLoginTests.password) },
                environment: ["SITE_PASSWORD": SiteLoginTests.password])
        }

        /// The server's counters: POSTs to /login, how many carried the remembered-device cookie, and the
        /// User-Agent of each.
        func stats() async throws -> (posts: Int, withDevice: Int, userAgents: [String]) {
            let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/stats"))
            let response = try await client.send(HTTPRequest(url: url), options: TransportOptions())
            let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            return (object["posts"] as? Int ?? -1, object["posts_with_device"] as? Int ?? -1,
                    object["user_agents"] as? [String] ?? [])
        }
    }

    static func withWorld(_ body: (World) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sessions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await PythonServer.start(
            script: fixtures.appendingPathComponent("redirecting_login.py").path, arguments: [password])
        let client = try CurlHTTPClient()
        let state = folder.appendingPathComponent("state").path
        let vault = try Vault.open(
            stateDirectory: state, key: .keyFile(path: state + "/master.key"), createIfMissing: true)
        let world = World(server: server, client: client, vault: vault, folder: folder)
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

    /// The issue's acceptance: a second login against a site that redirects logged-in visitors away from
    /// its form succeeds, because the stored essential cookie is left out; the remembered-device cookie
    /// goes along.
    @Test func aSecondLoginAgainstASiteThatRedirectsLoggedInVisitorsSucceeds() async throws {
        try await Self.withWorld { world in
            let site = try world.site()
            let first = try await world.login.run(site)
            #expect(first.flow.essentialCookies.allSatisfy { $0.isSet })
            #expect(Set(first.record.cookies.map(\.name)) == ["csrf", "sid", "device"])

            let events = EventRecorder()
            let second = try await world.login.run(site, events: events.sink)
            #expect(second.flow.essentialCookies.allSatisfy { $0.isSet })
            #expect(events.restoredNames == ["csrf", "device"])
            let stored = try #require(try await VaultSessionStore(vault: world.vault).load(site: site.name))
            #expect(try stored.encoded() == second.record.encoded())
            let stats = try await world.stats()
            #expect(stats.posts == 2)
            #expect(stats.withDevice == 1)
        }
    }

    /// What the daemon learned of the site's sessions (SPEC section 7) belongs to the site: a new login, from the
    /// stored session or `--fresh`, keeps it in the record it stores.
    @Test func aLoginKeepsWhatWasLearnedOfTheSitesSessions() async throws {
        try await Self.withWorld { world in
            let site = try world.site()
            let store = VaultSessionStore(vault: world.vault)
            var first = try await world.login.run(site).record
            let learned = LearnedLifetimes(idle: .init(atLeast: 15, atMost: 20, observations: 5), lifetime: .init(atLeast: 80, observations: 6))
            first.learned = learned
            try await store.save(first, site: site.name)
            for start in [SiteLogin.Start.storedSession, .fresh] {
                let again = try await world.login.run(site, start: start)
                #expect(again.record.learned == learned, "\(start)")
                #expect(try await store.load(site: site.name)?.learned == learned, "\(start)")
            }
        }
    }

    /// Why the default is what it is: a login that starts with the old session cookie sees no form.
    @Test func keepingTheEssentialCookieMakesTheRedirectingLoginFail() async throws {
        try await Self.withWorld { world in
            let site = try world.site(cookies: "cookies: {essential: [sid], keep_on_login: [sid, device]}")
            _ = try await world.login.run(site)
            do {
                _ = try await world.login.run(site)
                Issue.record("the second login worked although the form was never shown")
            } catch let error as SiteLoginError {
                guard case .flow(let flowError) = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
                #expect(flowError.kind == .extractionFailed)
            }
        }
    }

    @Test func keepNoneAndFreshStartFromAnEmptyJar() async throws {
        try await Self.withWorld { world in
            let none = try world.site(cookies: "cookies: {essential: [sid], keep_on_login: none}")
            _ = try await world.login.run(none)
            let events = EventRecorder()
            _ = try await world.login.run(none, events: events.sink)
            #expect(events.emptyStarts == [.keepNone])

            let site = try world.site()
            let fresh = EventRecorder()
            _ = try await world.login.run(site, start: .fresh, events: fresh.sink)
            #expect(fresh.emptyStarts == [.fresh])
            let stats = try await world.stats()
            #expect(stats.posts == 3)
            #expect(stats.withDevice == 0)
        }
    }

    @Test func theRecordKeepsTheUserAgentTheLoginSent() async throws {
        try await Self.withWorld { world in
            let site = try world.site("http: {user_agent: \"Mozilla/5.0 (X11; Linux x86_64) Test/1\"}")
            let result = try await world.login.run(site)
            #expect(result.record.userAgent == "Mozilla/5.0 (X11; Linux x86_64) Test/1")
            let stats = try await world.stats()
            #expect(stats.userAgents == ["Mozilla/5.0 (X11; Linux x86_64) Test/1"])
        }
    }

    @Test func outputsAreWrittenInTheirFormatAndModeAndAFailedOneIsReported() async throws {
        try await Self.withWorld { world in
            let cookies = world.folder.appendingPathComponent("out/new-folder/cookies.txt").path
            let header = world.folder.appendingPathComponent("header.txt").path
            let blocked = world.folder.appendingPathComponent("header.txt/inside.json").path
            let site = try world.site("""
                outputs:
                  - {path: \(cookies), format: netscape, mode: "0640"}
                  - {path: \(header), format: header}
                  - {path: \(blocked), format: json}
                """)
            let events = EventRecorder()
            let result = try await world.login.run(site, events: events.sink)
            #expect(result.outputFailures.map(\.path) == [blocked])
            #expect(result.outputFailures.first?.reason == "Not a directory")
            #expect(events.outputsWritten == [cookies, header])

            let attributes = try FileManager.default.attributesOfItem(atPath: cookies)
            #expect((attributes[.posixPermissions] as? Int) == 0o640)
            let folderAttributes = try FileManager.default.attributesOfItem(atPath: (cookies as NSString).deletingLastPathComponent)
            #expect((folderAttributes[.posixPermissions] as? Int) == 0o700)
            let netscape = try String(contentsOfFile: cookies, encoding: .utf8)
            let parsed = try CookieCodec.decode(netscape, as: .netscape, url: nil, now: Date())
            #expect(Set(parsed.map(\.name)) == ["csrf", "sid", "device"])
            let headerText = try String(contentsOfFile: header, encoding: .utf8)
            #expect(headerText.contains("sid="))
            #expect((try FileManager.default.attributesOfItem(atPath: header)[.posixPermissions] as? Int) == 0o600)
            // The session was stored all the same.
            let stored = try #require(try await VaultSessionStore(vault: world.vault).load(site: site.name))
            #expect(try stored.encoded() == result.record.encoded())
        }
    }

    @Test func anUnreadableStoredSessionIsReportedAndReplaced() async throws {
        try await Self.withWorld { world in
            let site = try world.site()
            try world.vault.set(Array("{\"format\":\"other\"}".utf8), for: VaultSessionStore.item(for: site.name))
            let events = EventRecorder()
            let result = try await world.login.run(site, events: events.sink)
            #expect(events.restoreProblems.count == 1)
            #expect(events.restoreProblems.first?.contains("not a sessionkeeper-site-session record") == true)
            let stored = try #require(try await VaultSessionStore(vault: world.vault).load(site: site.name))
            #expect(try stored.encoded() == result.record.encoded())
        }
    }

    @Test func aRefusedPasswordIsAFlowErrorClassifiedAsRefusedAndNothingIsStored() async throws {
        try await Self.withWorld { world in
            let site = try world.site()
            let wrong = SiteLogin(
                client: world.client, store: VaultSessionStore(vault: world.vault),
                credentials: { _ in EnvironmentCredentials(password: "wrong") }, environment: [:])
            do {
                _ = try await wrong.run(site)
                Issue.record("logged in with a wrong password")
            } catch let error as SiteLoginError {
                guard case .flow(let flowError) = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
                #expect(flowError.kind == .expectationFailed)
                #expect(!error.description.contains("wrong"))
            }
            #expect(try await VaultSessionStore(vault: world.vault).load(site: site.name) == nil)
        }
    }
}

/// Credentials for the fixture's one user.
struct EnvironmentCredentials: CredentialProvider {
    var password: String

    func value(of name: String, site: String) async throws -> String {
        switch name {
        case "username": "alice"
        case "password": password
        default: throw CredentialMissing(name: name)
        }
    }

    struct CredentialMissing: Error { var name: String }
}

/// Collects a login's session events.
final class EventRecorder: Sendable {
    private let events = Locked<[SessionEvent]>([])
    var sink: SessionEventSink { { [self] event in events.withLock { $0.append(event) } } }

    var restoredNames: [String]? {
        events.withLock { list in
            for case .restored(_, let names, _, _) in list { return names }
            return nil
        }
    }

    var emptyStarts: [SessionEvent.EmptyStart] {
        events.withLock { list in list.compactMap { if case .startingEmpty(_, let reason) = $0 { reason } else { nil } } }
    }

    var outputsWritten: [String] {
        events.withLock { list in list.compactMap { if case .outputWritten(_, let path, _) = $0 { path } else { nil } } }
    }

    var restoreProblems: [String] {
        events.withLock { list in list.compactMap { if case .restoreFailed(_, let problem) = $0 { problem } else { nil } } }
    }
}
