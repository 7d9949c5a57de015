// Loads and validates 1,000 generated site files (parse with libyaml, decode, validate templates,
// URLs, regexes, XPath, plugins), as the daemon does at start and `sessionkeeper check` does with
// no arguments. Goal: under 1 second for the whole folder. Prints the median of several runs.
import Foundation
import SiteConfig

let siteCount = Int(ProcessInfo.processInfo.environment["CONFIG_BENCH_SITES"] ?? "") ?? 1000
let runs = Int(ProcessInfo.processInfo.environment["CONFIG_BENCH_RUNS"] ?? "") ?? 7

/// A realistic site: CSRF form login, JSON API step, extractions of every kind, expectations,
/// a plugin step, check, keepalive, refresh, cookies and an output — about 60 lines.
func siteText(_ index: Int) -> String {
    """
    # Generated site \(index)
    description: Generated site number \(index)
    base_url: https://site\(index).example.com/app/
    allow_env: [TENANT]
    http:
      timeout: 20s
      connect_timeout: 5s
      user_agent: Mozilla/5.0 (X11; Linux x86_64)
      headers: {Accept-Language: en, X-Site: "\(index)"}
    credentials:
      username: user\(index)
      password: {secret: site\(index)/password}
      otp: {totp: {secret: site\(index)/totp, digits: 6}}
    login:
      steps:
        - name: login page
          get: /login
          query: {tenant: "{{ env.TENANT }}"}
          extract:
            csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}
            nonce: {regex: "nonce=([a-f0-9]{8,})"}
          expect: {status: 200, body_contains: "<form"}
        - name: submit
          post: /login
          form:
            username: "{{ credentials.username }}"
            password: "{{ credentials.password }}"
            csrf: "{{ csrf }}"
            nonce: "{{ nonce }}"
          follow_redirects: false
          expect:
            status: [302, 303]
            cookie: session\(index)
            not_body_contains: Invalid password
            header: {name: Location, matches: "^/(home|account)"}
        - name: api
          post: /api/session
          json: {user: "{{ credentials.username }}", remember: true, ttl: 3600}
          extract:
            token: {json: /token}
          expect: {json: {path: /ok, equals: true}}
        - name: second factor
          plugin: bench-plugin.sh
          with: {code: "{{ credentials.otp }}", token: "{{ token }}"}
          timeout: 20s
          provides: [device]
    check:
      get: /api/me
      expect: {status: 200, json: {path: /user/name, equals: user\(index)}}
      every: 15m
    keepalive: {get: /ping, every: 5m}
    refresh: {before_expiry: 10m, max_age: 12h, retry: {initial: 30s, max: 30m}}
    cookies: {essential: [session\(index)], accept: main-document-domain}
    outputs:
      - {path: out/site\(index).txt, format: netscape, mode: "0600"}
    access: {uids: [1000], groups: [scrapers]}
    """
}

let fileManager = FileManager.default
let folder = fileManager.temporaryDirectory.appendingPathComponent("config-benchmark-\(getpid())").path
defer { try? fileManager.removeItem(atPath: folder) }
try fileManager.createDirectory(atPath: folder + "/sites", withIntermediateDirectories: true)
try fileManager.createDirectory(atPath: folder + "/plugins", withIntermediateDirectories: true)
try "#!/bin/sh\necho '{}'\n".write(toFile: folder + "/plugins/bench-plugin.sh", atomically: true, encoding: .utf8)
try fileManager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder + "/plugins/bench-plugin.sh")
try "sites_dir: sites\nplugins_dir: plugins\n".write(toFile: folder + "/config.yaml", atomically: true, encoding: .utf8)
var totalBytes = 0
for index in 0..<siteCount {
    let text = siteText(index)
    totalBytes += text.utf8.count
    try text.write(toFile: folder + "/sites/site\(String(format: "%04d", index)).yaml", atomically: false, encoding: .utf8)
}

/// CPU time (user + system) of this process so far, in milliseconds: on a shared machine it
/// varies far less than wall time.
func cpuMilliseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) * 1000 + Double(usage.ru_utime.tv_usec) / 1000
    let system = Double(usage.ru_stime.tv_sec) * 1000 + Double(usage.ru_stime.tv_usec) / 1000
    return user + system
}

let loader = ConfigurationLoader()
let clock = ContinuousClock()
var durations: [Duration] = []
var cpuTimes: [Double] = []
for _ in 0..<runs {
    let start = clock.now
    let cpuStart = cpuMilliseconds()
    let config = try loader.loadConfig(at: folder + "/config.yaml")
    let result = loader.loadSites(config: config)
    durations.append(clock.now - start)
    cpuTimes.append(cpuMilliseconds() - cpuStart)
    guard result.failures.isEmpty, result.sites.count == siteCount else {
        print("unexpected failures: \(result.failures.prefix(3))")
        exit(1)
    }
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
let sorted = durations.sorted()
let median = milliseconds(sorted[sorted.count / 2])
print("ConfigBenchmark: load + validate \(siteCount) site files (\(totalBytes / 1024) KiB), \(runs) runs")
print(String(format: "  median %.1f ms, min %.1f ms, max %.1f ms, %.2f ms per site", median,
    milliseconds(sorted.first!), milliseconds(sorted.last!), median / Double(siteCount)))
print(String(format: "  CPU time median %.1f ms", cpuTimes.sorted()[cpuTimes.count / 2]))
print("  peak RSS \(usage.ru_maxrss / 1024) MiB; goal < 1000 ms: \(median < 1000 ? "met" : "MISSED")")
