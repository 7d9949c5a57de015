// What the login benchmarks share: the demo site's 3-request login as a site file, literal credentials, and
// the process's CPU time.
import Foundation
import LoginFlow
import SiteConfig

#if canImport(Glibc)
import Glibc
#endif

/// The demo site's login (GET /login with an XPath CSRF extraction, POST /login expecting 303 and the
/// session cookie, GET /api/me), loaded as a site file against `baseURL`.
public func demoLoginSite(baseURL: String, user: String = "alice", password: String = "wonderland") throws -> SiteDefinition {
    let text = """
        base_url: \(baseURL)
        credentials:
          username: \(user)
          password: "\(password)"
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
              expect: {status: 303, cookie: demo_session}
            - name: me
              get: /api/me
              expect: {status: 200}
        cookies:
          essential: [demo_session]
          accept: always
        """
    let loader = ConfigurationLoader()
    let config = loader.defaultConfig(directory: FileManager.default.currentDirectoryPath)
    return try loader.loadSite(text: text, file: "bench.yaml", config: config)
}

/// Literal credentials only: the benchmarks measure the flow, not the vault.
public struct LiteralCredentials: CredentialProvider {
    public let site: SiteDefinition

    public init(site: SiteDefinition) { self.site = site }

    public func value(of name: String, site _: String) async throws -> String {
        guard case .literal(let value) = site.credential(named: name) else {
            throw BenchmarkFailure(message: "credential \(name) is not a literal")
        }
        return value
    }
}

public struct BenchmarkFailure: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}

/// User + system CPU seconds of this process so far.
public func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
