import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import Testing

/// Django, installed from PyPI at test time into a temporary folder (`pip install --target`), shared by
/// the tests of this suite and removed when the process ends. nil when it cannot be installed (no
/// network, no pip): the tests are then skipped with that reason.
enum DjangoInstall {
    struct Installed: Sendable {
        var python: String
        var libraryFolder: URL
    }

    static let installed: Installed? = {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
              let folder = try? Integration.temporaryFolder("integ-django-lib")
        else { return nil }
        atexit { if let folder = DjangoInstall.installed?.libraryFolder { try? FileManager.default.removeItem(at: folder) } }
        var environment = ProcessInfo.processInfo.environment
        environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        environment["PIP_DEFAULT_TIMEOUT"] = "60"
        guard let result = try? Integration.runTool(
            python, ["-m", "pip", "install", "--quiet", "--target", folder.path, "django"], environment: environment),
            result.status == 0,
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("django").path)
        else {
            try? FileManager.default.removeItem(at: folder)
            return nil
        }
        return Installed(python: python, libraryFolder: folder)
    }()
}

/// A flow that logs into Django's admin, a real third-party application (not written by us), on
/// 127.0.0.1: CSRF token from the form (form_from) and the csrftoken cookie, sessionid as the essential
/// cookie, and a check of /admin/.
@Suite(.serialized, .enabled("Django could not be installed from PyPI (no network or no pip?); skipping the third-party login test") {
    DjangoInstall.installed != nil
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
        let install = try #require(DjangoInstall.installed)
        let folder = try Integration.temporaryFolder("integ-django-site")
        defer { try? FileManager.default.removeItem(at: folder) }
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = install.libraryFolder.path
        environment["DJANGO_ADMIN_PASSWORD"] = password
        let server = try PythonServer(
            script: Integration.fixtures.appendingPathComponent("django_admin_site.py").path, arguments: [folder.path],
            environment: environment, executable: install.python)
        defer { server.stop() }
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
            let events = IntegrationEvents()
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
