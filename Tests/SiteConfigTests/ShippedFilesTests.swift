import Foundation
import Testing
@testable import SiteConfig

@Suite struct ShippedFilesTests {
    @Test func repositoryConfigLoadsWithDocumentedDefaults() throws {
        let config = try repositoryConfig()
        let root = Paths.repository.path
        #expect(config.sitesDirectory == root + "/sites")
        #expect(config.pluginsDirectory == root + "/plugins")
        #expect(config.stateDirectory == root + "/.state")
        #expect(config.socket.path == root + "/.state/sessionkeeper.sock")
        #expect(config.socket.mode == 0o600)
        #expect(config.vault.key == .file(path: root + "/.state/master.key"))
        #expect(config.scheduler == SchedulerSettings(maxConcurrentLogins: 8, perHostInterval: .seconds(1), jitter: 0.1))
        #expect(config.defaults.http.timeout == .seconds(30))
        #expect(config.defaults.http.userAgent == "SessionKeeper/1")
        #expect(config.defaults.refresh.beforeExpiry == .seconds(600))
        #expect(config.log == LogSettings(level: .info, format: .text))
        #expect(config.metrics)
    }

    @Test func everyShippedSiteLoads() throws {
        let config = try repositoryConfig()
        let result = loader.loadSites(config: config)
        #expect(result.failures.isEmpty, "\(result.failures)")
        let names = result.sites.map(\.name)
        #expect(names == ["demo", "example-browser", "example-csrf-form", "example-json-api", "example-plugin", "example-signed-api", "example-sso", "example-totp"])
        #expect(result.sites.filter(\.enabled).map(\.name) == ["demo"])
    }

    @Test func demoSiteMatchesTheDemoServer() throws {
        let config = try repositoryConfig()
        let demo = try loader.loadSite(at: Paths.repository.appendingPathComponent("sites/demo.yaml").path, config: config)
        #expect(demo.baseURL.absoluteString == "http://127.0.0.1:8480")
        #expect(demo.credential(named: "username") == .literal("alice"))
        #expect(demo.credential(named: "password") == .environment("DEMO_PASSWORD"))
        #expect(demo.cookies.essential == ["demo_session"])
        #expect(demo.cookies.accept == .mainDocumentDomain)
        #expect(demo.cookies.keepOnLogin == .allButEssential)
        #expect(demo.http.userAgent == "SessionKeeper/1", "config defaults are merged under the site")
        guard case .steps(let steps) = demo.login else {
            Issue.record("demo logs in with steps")
            return
        }
        #expect(steps.map(\.name) == ["login page", "submit"])
        #expect(steps[0].request?.extract.first?.extraction == .xpath("//form[@id='login']//input[@name='csrf']/@value"))
        let submit = try #require(steps[1].request)
        #expect(submit.method == "POST")
        #expect(submit.followRedirects == false)
        #expect(submit.expect.map(\.kind).contains(.status([303])))
        #expect(submit.expect.map(\.kind).contains(.cookie("demo_session")))
        let check = try #require(demo.check)
        #expect(check.request.url?.source == "/api/me")
        #expect(check.request.expect.map(\.kind).contains(.json(pointer: "/user/name", equals: .string("alice"))))
        #expect(demo.keepalive?.request.url?.source == "/ping")
    }

    @Test func pluginExampleFindsItsExecutable() throws {
        let config = try repositoryConfig()
        let site = try loader.loadSite(at: Paths.repository.appendingPathComponent("sites/example-plugin.yaml").path, config: config)
        guard case .plugin(let plugin) = site.login else {
            Issue.record("the plugin example logs in with a plugin")
            return
        }
        #expect(plugin.executablePath == Paths.repository.path + "/plugins/demo-login.py")
        #expect(FileManager.default.isExecutableFile(atPath: plugin.executablePath))
        #expect(plugin.passCredentials)
        #expect(plugin.timeout == .seconds(30))
        #expect(plugin.environment == [.inherit("TZ")])
    }

    /// The plugins the examples name are shipped and executable (browser-login has no extension).
    @Test(arguments: [("example-browser", "browser-login"), ("example-signed-api", "sign-request.py")])
    func examplePluginsAreShippedExecutables(site name: String, plugin expected: String) throws {
        let config = try repositoryConfig()
        let site = try loader.loadSite(at: Paths.repository.appendingPathComponent("sites/\(name).yaml").path, config: config)
        var paths: [String] = []
        switch site.login {
        case .plugin(let plugin): paths.append(plugin.executablePath)
        case .steps(let steps): paths += steps.compactMap { if case .plugin(let plugin) = $0.action { plugin.executablePath } else { nil } }
        case .manual: break
        }
        #expect(paths == [Paths.repository.path + "/plugins/\(expected)"])
        #expect(paths.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) })
    }
}
