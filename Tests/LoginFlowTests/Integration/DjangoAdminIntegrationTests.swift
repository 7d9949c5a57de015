import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import Locking
import LoginFlow
import SiteConfig
import TestSupport
import Testing

/// Django, installed from PyPI at test time into a temporary folder (`pip install --target`), shared by
/// the tests of this suite and removed when the process ends. nil when it cannot be installed (no
/// network, no pip): the tests are then skipped with that reason.
enum DjangoInstall {
    /// The exact release installed, so a new Django cannot change what the test sees (its login form,
    /// its cookies). 5.2 is a long-term-support series and runs on the Python 3.10+ the test machines have.
    static let version = "5.2.19"

    struct Installed: Sendable {
        var python: String
        var libraryFolder: TemporaryFolder
    }

    /// The installation, made once (on a dedicated thread: pip takes seconds) when first asked for.
    static var installed: Installed? {
        get async { await installation.value }
    }

    private static let installation = Task { await onDedicatedThread { install() } }

    /// The library folder to remove when the process ends.
    private static let folderToRemove = Locked<TemporaryFolder?>(nil)

    /// Blocks while pip runs; called only on a dedicated thread.
    private static func install() -> Installed? {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
              let folder = try? TemporaryFolder("django-library")
        else { return nil }
        folderToRemove.withLock { $0 = folder }
        atexit { DjangoInstall.folderToRemove.withLock { $0 }?.cleanUp() }
        var environment = ProcessInfo.processInfo.environment
        environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        environment["PIP_DEFAULT_TIMEOUT"] = "60"
        guard let result = try? runProgramOnThisThread(
            python, ["-m", "pip", "install", "--quiet", "--target", folder.path, "django==\(version)"], environment: environment,
            standardError: .mergedWithOutput),
            result.status == 0,
            FileManager.default.fileExists(atPath: folder.path("django"))
        else {
            folder.cleanUp()
            return nil
        }
        return Installed(python: python, libraryFolder: folder)
    }
}

/// A flow that logs into Django's admin, a real third-party application (not written by us), on
/// 127.0.0.1: CSRF token from the form (form_from) and the csrftoken cookie, sessionid as the essential
/// cookie, and a check of /admin/.
@Suite(.serialized, .enabled("Django \(DjangoInstall.version) could not be installed from PyPI (no network or no pip?); skipping the third-party login test") {
    await DjangoInstall.installed != nil
})
struct DjangoAdminIntegrationTests {
    static let password = "Dj4ngo-admin-Secret"

    static func siteYAML(port: Int) -> String {
        """
        description: Django admin (third-party application from PyPI)
        base_url: http://127.0.0.1:\(port)
        credentials: {username: admin, password: {env: UNUSED_IN_TESTS}}
        login:
          steps:
            - name: login page
              get: /admin/login/?next=/admin/
              expect: {status: 200, cookie: csrftoken, body_contains: csrfmiddlewaretoken}
              extract:
                token: {xpath: "//form[@id='login-form']//input[@name='csrfmiddlewaretoken']/@value"}
            - name: submit
              form_from: {xpath: "//form[@id='login-form']"}
              form:
                username: "{{ credentials.username }}"
                password: "{{ credentials.password }}"
                csrfmiddlewaretoken: "{{ token }}"
              follow_redirects: false
              expect:
                status: 302
                cookie: sessionid
                header: {name: Location, matches: "^/admin/$"}
        check:
          get: /admin/
          expect: {status: 200, body_contains: Site administration}
        cookies: {essential: [sessionid], accept: main-document-domain}
        """
    }

    /// Starts Django's admin in a fresh folder, runs `body`, stops the server and removes the folder.
    static func withDjango(_ body: (Int, CurlHTTPClient) async throws -> Void) async throws {
        let install = try #require(await DjangoInstall.installed)
        let folder = try TemporaryFolder("django-site")
        defer { folder.cleanUp() }
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = install.libraryFolder.path
        environment["DJANGO_ADMIN_PASSWORD"] = password
        // Before it prints its port the script runs three Django commands (startproject, migrate, a superuser),
        // each a Python start that imports Django: with the whole suite in parallel on 2 cores that took more
        // than 30 s twice.
        let server = try await PythonServer.start(
            script: Integration.fixtures.appendingPathComponent("django_admin_site.py").path, arguments: [folder.path],
            environment: environment, executable: install.python, readyWithin: .seconds(120))
        do {
            try await withServer(server, body)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Waits until Django answers, then runs `body` with a libcurl client.
    private static func withServer(_ server: PythonServer, _ body: (Int, CurlHTTPClient) async throws -> Void) async throws {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }

        // runserver needs a moment after printing the port: wait until the login page answers.
        let loginPage = try #require(URL(string: "http://127.0.0.1:\(server.port)/admin/login/"))
        var ready = false
        for _ in 0..<150 where !ready {
            if let response = try? await client.send(HTTPRequest(url: loginPage), options: TransportOptions()), response.status == 200 {
                ready = true
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        try #require(ready, "Django's runserver did not answer on port \(server.port)")
        try await body(server.port, client)
    }

    @Test func logsIntoDjangoAdminAndChecksTheSession() async throws {
        try await Self.withDjango { port, client in
            let site = try Integration.site(Self.siteYAML(port: port), name: "django")
            let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
            let engine = Integration.engine(client, credentials: ["username": "admin", "password": Self.password])
            let events = EventLog()
            let result = try await engine.login(site, storage: storage, observer: events.observer)

            #expect(result.steps.map(\.status) == [200, 302])
            #expect(events.exchanges.map(\.method) == ["GET", "POST"])
            let session = try #require(result.essentialCookies.first)
            #expect(session.name == "sessionid" && session.isSet && session.domain == "127.0.0.1")
            // Django's default SESSION_COOKIE_AGE is two weeks.
            #expect(abs(try #require(session.expires).timeIntervalSinceNow - 14 * 86_400) < 600)
            #expect(Set(result.cookies.map(\.name)) == ["csrftoken", "sessionid"])

            let probe = try await engine.check(site, storage: storage)
            #expect(probe.status == 200)

            // Without the session cookie the admin sends us to the login page: check fails, not unreachable.
            storage.deleteCookies(named: "sessionid", for: URL(string: "http://127.0.0.1:\(port)/")!)
            let error = await #expect(throws: FlowError.self) { _ = try await engine.check(site, storage: storage) }
            #expect(error?.isUnreachable == false)
        }
    }

    @Test func wrongPasswordFailsAtTheSubmitStepWithoutLeakingIt() async throws {
        try await Self.withDjango { port, client in
            let site = try Integration.site(Self.siteYAML(port: port), name: "django")
            let wrong = "not-the-Django-password"
            let engine = Integration.engine(client, credentials: ["username": "admin", "password": wrong])
            let error = await #expect(throws: FlowError.self) {
                _ = try await engine.login(site, storage: CookieStorage(acceptPolicy: .mainDocumentDomain))
            }
            #expect(error?.step == "submit")
            #expect(error?.found == "status 200")
            #expect(error.map { !"\($0)".contains(wrong) } == true)
        }
    }
}
