// JarBenchmark: (a) Set-Cookie parsing throughput of CookieJar next to libcurl's own cookie parser fed the
// same headers through CURLOPT_COOKIELIST, in the same run; (b) CookieStorage.cookies(for:) latency with
// 100,000 cookies over 10,000 domains. Build with `-c release`; prints a table.
// `JarBenchmark login-shaped [LOGINS]` runs only (c): the jar calls of one demo-site login on a fresh, small jar
// (LOGINS per batch, 50,000 by default), then each call alone.
import CCurlBenchmark
import CookieJar
import Foundation

/// The same synthetic headers for both parsers: realistic attribute mixes, every one with a Domain attribute
/// (libcurl's COOKIELIST has no request host to default to).
func makeHeaders(count: Int) -> [(header: String, host: String)] {
    let shapes = [
        "sid%d=%@; Domain=%@; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=86400",
        "pref%d=%@; Domain=.%@; Path=/app; Expires=Fri, 01 Jan 2049 00:00:00 GMT",
        "track%d=%@; domain=%@; path=/; max-age=3600; samesite=none; secure",
        "t%d=%@; Domain=%@",
    ]
    return (0..<count).map { index in
        // Each run of 50 headers is one response from one host (see `batch` below).
        let domain = "d\(index / 50 % 1000).example.com"
        let value = String(repeating: "v", count: 16 + index % 48)
        let parts = shapes[index % shapes.count].components(separatedBy: "%@")
        let header = parts[0].replacingOccurrences(of: "%d", with: String(index % 50)) + value + parts[1] + domain + parts[2]
        return (header, "www." + domain)
    }
}

struct Row {
    var name: String
    var detail: String
}

var rows: [Row] = []

/// The fastest of `rounds` runs: other processes on a shared machine only ever add time.
func best(of rounds: Int = 5, _ body: () -> Void) -> Duration {
    (0..<rounds).map { _ in clock.measure(body) }.min()!
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// `--only parse` or `--only lookup` runs one half (for profiling).
let only: String? = CommandLine.arguments.firstIndex(of: "--only").flatMap {
    CommandLine.arguments.indices.contains($0 + 1) ? CommandLine.arguments[$0 + 1] : nil
}

let clock = ContinuousClock()

// MARK: (c) login-shaped: the jar calls of one login, on a fresh jar

/// CPU time (user + system) of this process so far.
func cpuTime() -> Duration {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func duration(_ time: timeval) -> Duration { .seconds(time.tv_sec) + .microseconds(time.tv_usec) }
    return duration(usage.ru_utime) + duration(usage.ru_stime)
}

if CommandLine.arguments.dropFirst().first == "login-shaped" {
    // What the flow engine asks of a fresh `CookieStorage(acceptPolicy: .always)` while logging into the demo
    // site (issue 4): GET /login (no cookie yet; the response sets the CSRF cookie), POST /login (the response
    // sets the session cookie and redirects), GET /account; the CSRF cookie read by name; `allCookies` for the
    // secret masker and the result. The URLs are the engine's cached ones, the same objects every login.
    let baseURL = URL(string: "http://127.0.0.1:41125/")!
    let loginURL = URL(string: "http://127.0.0.1:41125/login")!
    let accountURL = URL(string: "http://127.0.0.1:41125/account")!
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    func token(_ seed: Int) -> String {
        String((0..<43).map { alphabet[($0 &* 31 &+ seed &* 17) % alphabet.count] })
    }
    let csrfHeader = "demo_csrf=\(token(1)).\(token(2)); Path=/; HttpOnly; SameSite=Strict"
    let sessionHeader = "demo_session=\(token(3)); Path=/; HttpOnly; SameSite=Lax; Max-Age=3600"

    /// Counts only (never a value), so the optimiser keeps every call.
    var sink = 0
    func login() {
        let storage = CookieStorage(acceptPolicy: .always)
        sink &+= storage.allCookies.count  // the masker learns what the jar held at the start
        // GET /login
        sink &+= storage.cookieHeader(for: loginURL)?.utf8.count ?? 0
        for case .stored(let cookie) in storage.setCookies(fromHeaders: [csrfHeader], for: loginURL, mainDocumentURL: baseURL) {
            sink &+= cookie.value.utf8.count
        }
        // The form step reads the CSRF cookie by name.
        sink &+= storage.cookies(for: loginURL).filter { $0.name == "demo_csrf" }.count
        // POST /login, then the redirect to /account
        sink &+= storage.cookieHeader(for: loginURL)?.utf8.count ?? 0
        for case .stored(let cookie) in storage.setCookies(fromHeaders: [sessionHeader], for: loginURL, mainDocumentURL: baseURL) {
            sink &+= cookie.value.utf8.count
        }
        sink &+= storage.cookieHeader(for: accountURL)?.utf8.count ?? 0
        sink &+= storage.cookies(for: accountURL).filter { $0.name == "demo_session" }.count
        // Essential cookies and the result
        sink &+= storage.allCookies.count
        sink &+= storage.allCookies.count
    }

    let logins = CommandLine.arguments.dropFirst(2).first.flatMap(Int.init) ?? 50_000
    for _ in 0..<2_000 { login() }  // warm-up: lazy globals (PSL), caches, page faults
    var cpuSamples: [Double] = []
    var wallSamples: [Double] = []
    for _ in 0..<5 {
        let cpuStart = cpuTime()
        let wallStart = clock.now
        for _ in 0..<logins { login() }
        wallSamples.append(seconds(clock.now - wallStart) * 1e9 / Double(logins))
        cpuSamples.append(seconds(cpuTime() - cpuStart) * 1e9 / Double(logins))
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    print(String(format: "login-shaped: %.0f ns CPU per login (median of 5 x %d; batches %@), wall %.0f ns",
                 median(cpuSamples), logins, cpuSamples.map { String(format: "%.0f", $0) }.joined(separator: "/"),
                 median(wallSamples)))

    // The same calls one kind at a time on a jar holding the two cookies (setCookies replaces them), for
    // where the time goes.
    let filled = CookieStorage(acceptPolicy: .always)
    filled.setCookies(fromHeaders: [csrfHeader, sessionHeader], for: loginURL, mainDocumentURL: baseURL)
    let rounds = logins * 2
    func perCall(_ name: String, _ body: () -> Void) {
        var samples: [Double] = []
        for _ in 0..<5 {
            let start = cpuTime()
            for _ in 0..<rounds { body() }
            samples.append(seconds(cpuTime() - start) * 1e9 / Double(rounds))
        }
        print("  " + name.padding(toLength: 40, withPad: " ", startingAt: 0) + String(format: "%6.0f ns", median(samples)))
    }
    perCall("cookieHeader(for:), 2 cookies") { sink &+= filled.cookieHeader(for: loginURL)?.utf8.count ?? 0 }
    perCall("cookieHeader(for:), empty jar") { sink &+= CookieStorage().cookieHeader(for: loginURL)?.utf8.count ?? 0 }
    perCall("setCookies, one header (replacing)") {
        sink &+= filled.setCookies(fromHeaders: [sessionHeader], for: loginURL, mainDocumentURL: baseURL).count
    }
    perCall("cookies(for:), 2 cookies") { sink &+= filled.cookies(for: accountURL).count }
    perCall("allCookies, 2 cookies") { sink &+= filled.allCookies.count }
    perCall("CookieStorage() alone") { sink &+= CookieStorage().limits.maxCookies }
    perCall("  SetCookieParser.parse, session header") {
        if case .success(let parsed) = SetCookieParser.parse(sessionHeader) { sink &+= parsed.name.utf8.count }
    }
    perCall("  URL origin (CookieRules.isSecureOrigin)") { sink &+= CookieRules.isSecureOrigin(accountURL) ? 1 : 0 }
    if sink == 42 { print("") }  // keeps `sink` alive without printing anything derived from a value
    exit(0)
}

// MARK: (a) parsing throughput

if only != "lookup" {
let headerCount = 100_000
    // Both jars start empty every `batch` headers, as one response's worth: libcurl 7.88+ ignores a response's
    // Set-Cookie headers after the 50th (MAX_SET_COOKIE_AMOUNT), and COOKIELIST counts toward that per handle,
    // so libcurl gets a fresh handle per batch and the jar a fresh CookieStorage.
    let batch = 50
    let headers = makeHeaders(count: headerCount)
    if CommandLine.arguments.contains("--show-headers") { headers.prefix(4).forEach { print($0.header) } }
        let urls = headers.map { URL(string: "https://\($0.host)/")! }
    
    // Parse only (RFC 6265 section 5.2).
    var parsedCount = 0
    let parseOnly = best {
        parsedCount = 0
        for entry in headers {
            if case .success = SetCookieParser.parse(entry.header) { parsedCount += 1 }
        }
    }
    
    // Parse and store, one call per header (5.2 + 5.3 rules, PSL, storage), as libcurl is fed below.
    var storedCount = 0
    let jarStore = best {
        storedCount = 0
        var start = 0
        while start < headerCount {
            let storage = CookieStorage()
            for index in start..<min(start + batch, headerCount) {
                let decisions = storage.setCookies(fromHeaders: [headers[index].header], for: urls[index], mainDocumentURL: nil)
                if case .stored = decisions[0] { storedCount += 1 }
            }
            start += batch
        }
    }

    // Parse and store, one call per response of 50 headers: how a client uses the jar.
    var responseStoredCount = 0
    let jarResponses = best {
        responseStoredCount = 0
        var start = 0
        while start < headerCount {
            let storage = CookieStorage()
            let end = min(start + batch, headerCount)
            let values = headers[start..<end].map(\.header)
            for decision in storage.setCookies(fromHeaders: values, for: urls[start], mainDocumentURL: nil) {
                if case .stored = decision { responseStoredCount += 1 }
            }
            start += batch
        }
    }
    
    if only == "store" {
        // Profiling aid: the jar's parse + store loop alone, repeated.
        for _ in 0..<20 {
            var start = 0
            while start < headerCount {
                let storage = CookieStorage()
                for index in start..<min(start + batch, headerCount) {
                    storage.setCookies(fromHeaders: [headers[index].header], for: urls[index], mainDocumentURL: nil)
                }
                start += batch
            }
        }
    }

    // Where the jar's time goes: the request URL's origin, and the 5.3 rules (PSL included) after parsing.
    let parsedHeaders = headers.compactMap { try? SetCookieParser.parse($0.header).get() }
    var secureCount = 0
    let originOnly = best {
        secureCount = 0
        for url in urls where CookieRules.isSecureOrigin(url) { secureCount += 1 }
    }
    let now = Date()
    var madeCount = 0
    let rulesOnly = best {
        madeCount = 0
        for (index, parsed) in parsedHeaders.enumerated() {
            if case .success = CookieRules.makeCookie(from: parsed, receivedFrom: urls[index], now: now) { madeCount += 1 }
        }
    }

    // libcurl: the same headers as "Set-Cookie:" lines through CURLOPT_COOKIELIST.
    _ = ccurl_global_init_default()
    let curlLines = headers.map { "Set-Cookie: " + $0.header }
    var curlKept = 0
    let curlStore = best {
        var start = 0
        while start < headerCount {
            guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed") }
            _ = ccurl_easy_setopt_string(handle, CURLOPT_COOKIEFILE, "")  // starts the cookie engine, no file
            for index in start..<min(start + batch, headerCount) {
                _ = ccurl_easy_setopt_string(handle, CURLOPT_COOKIELIST, curlLines[index])
            }
            if start == 0 { curlKept = countCookies(handle) }
            curl_easy_cleanup(handle)
            start += batch
        }
    }
    
    /// The cookies a handle holds (CURLINFO_COOKIELIST), to check that libcurl really kept what it was fed.
    func countCookies(_ handle: UnsafeMutableRawPointer) -> Int {
        var list: UnsafeMutablePointer<curl_slist>?
        // CURLINFO_COOKIELIST fills a `struct curl_slist *`; the shim's pointer-sized getinfo wrapper carries it.
        let result = withUnsafeMutablePointer(to: &list) { slot in
            slot.withMemoryRebound(to: UnsafeMutablePointer<CChar>?.self, capacity: 1) {
                ccurl_easy_getinfo_string(handle, CURLINFO_COOKIELIST, $0)
            }
        }
        guard result == CURLE_OK else { return -1 }
        var count = 0
        var node = list
        while let current = node { count += 1; node = current.pointee.next }
        curl_slist_free_all(list)
        return count
    }
    
    func rate(_ count: Int, _ duration: Duration) -> String {
        let perSecond = Double(count) / seconds(duration)
        return String(format: "%10.0f headers/s  %7.2f µs/header", perSecond, 1e6 / perSecond)
    }
    
    let curlVersion = String(cString: ccurl_version_info().pointee.version)
    rows.append(Row(name: "CookieJar parse only (5.2)", detail: rate(headerCount, parseOnly) + "  (\(parsedCount) parsed)"))
    rows.append(Row(name: "CookieJar parse + store, per header", detail: rate(headerCount, jarStore) + "  (\(storedCount) stored)"))
    rows.append(Row(name: "CookieJar parse + store, per response", detail: rate(headerCount, jarResponses) + "  (\(responseStoredCount) stored)"))
    rows.append(Row(name: "  of which URL origin", detail: rate(headerCount, originOnly)))
    rows.append(Row(name: "  of which origin + 5.3 rules", detail: rate(headerCount, rulesOnly) + "  (\(madeCount) made)"))
    rows.append(Row(name: "libcurl \(curlVersion) COOKIELIST", detail: rate(headerCount, curlStore) + "  (\(curlKept) of the first \(batch) kept)"))
}

// MARK: (b) cookies(for:) with 100,000 cookies over 10,000 domains

if only != "parse" {
let domainCount = 10_000
    let perDomain = 10
    let base = Date(timeIntervalSince1970: 1_700_000_000)
    let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 50, maxCookies: domainCount * perDomain * 2),
                                clock: { base })
    for domain in 0..<domainCount {
        for index in 0..<perDomain {
            // Half host-only on www.dN.example.org, half domain cookies on dN.example.org; two paths.
            let hostOnly = index % 2 == 0
            storage.setCookie(Cookie(
                name: "c\(index)", value: "value\(index)", domain: hostOnly ? "www.d\(domain).example.org" : "d\(domain).example.org",
                hostOnly: hostOnly, path: index % 3 == 0 ? "/app" : "/", expires: base.addingTimeInterval(86_400),
                secure: index % 4 == 0, created: base.addingTimeInterval(Double(index))))
        }
    }
    let stored = storage.allCookies.count
    let queryURLs = (0..<domainCount).map { URL(string: "https://www.d\($0).example.org/app/page?x=1")! }
    var samples: [Double] = []
    samples.reserveCapacity(100_000)
    var returned = 0
    for round in 0..<100_000 {
        let target = queryURLs[(round &* 7919) % domainCount]
        let started = clock.now
        let found = storage.cookies(for: target)
        samples.append(seconds(clock.now - started) * 1e6)
        returned += found.count
    }
    samples.sort()
    @MainActor func percentile(_ p: Double) -> Double { samples[min(samples.count - 1, Int(Double(samples.count) * p))] }
    rows.append(Row(name: "cookies(for:) \(stored) cookies / \(domainCount) domains",
                    detail: String(format: "median %.2f µs  p90 %.2f µs  p99 %.2f µs  (%.1f cookies per answer)",
                                   percentile(0.5), percentile(0.9), percentile(0.99), Double(returned) / Double(samples.count))))
}

let width = rows.map(\.name.count).max() ?? 0
print("JarBenchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
for row in rows {
    print(row.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + row.detail)
}
