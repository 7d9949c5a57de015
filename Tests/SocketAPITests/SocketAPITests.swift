import Daemon
import Foundation
import JSON
import Platform
import Scheduler
import Sessions
import SiteConfig
import SocketAPI
import Testing
import TestSupport

/// The socket API over a real Unix socket, answered by the real server and keeper against the demo site, asked
/// by real `curl --unix-socket` processes (as root, and as nobody through `setpriv`).
@Suite(.serialized) struct SocketAPITests {
    private static func valid(_ keeper: Keeper, _ site: String = "demo") async throws -> Bool {
        try await waitUntil(.seconds(8)) { await keeper.snapshot(of: site)?.status.phase == .valid }
    }

    @Test func healthSitesAndOneSiteAnswerTheContract() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                let health = try await world.curl("/v1/health")
                #expect(health.status == 200)
                #expect(health.json?["status"]?.plainText == "ok")
                #expect(health.json?["version"]?.plainText == SessionKeeperVersion.string)
                #expect(Int(health.json?["uptime_s"]?.plainText ?? "") != nil)

                let sites = try await world.curl("/v1/sites")
                #expect(sites.status == 200)
                guard case .array(let list)? = sites.json?["sites"] else {
                    Issue.record("no sites array")
                    return
                }
                #expect(list.count == 1)
                let site = try #require(list.first)
                #expect(site["name"]?.plainText == "demo")
                #expect(site["state"]?.plainText == "valid")
                #expect(site["expires_at"]?.plainText.hasSuffix("Z") == true)
                #expect(site["last_login"]?.plainText.hasSuffix("Z") == true)
                #expect(site["last_error"] == .null)
                let keys = [
                    "name", "state", "expires_at", "last_login", "next_refresh", "last_error", "next_run", "failures", "retry_at",
                    "attention", "learned",
                ]
                if case .object(let members) = site { #expect(members.map(\.key) == keys) }
                // The check planned, or while the check that follows the login still runs, the next login.
                #expect(["check", "refresh"].contains(site["next_run"]?["kind"]?.plainText ?? "-"), "\(site)")
                #expect(site["next_run"]?["at"]?.plainText.hasSuffix("Z") == true)
                #expect(site["failures"] == .number("0") && site["retry_at"] == .null && site["attention"] == .null)
                // The test runs as the daemon's user, a manager: the site files that failed to load (none).
                #expect(sites.json?["failed_files"] == .array([]))

                let one = try await world.curl("/v1/sites/demo")
                #expect(one.status == 200)
                #expect(one.json?["cookies"] == .array([.string("demo_csrf"), .string("demo_session")]))
                let userAgent = try world.site().http.userAgent
                #expect(one.json?["user_agent"]?.plainText == userAgent)
                #expect(one.json?["state"]?.plainText == "valid")
                // A site that says nothing of egress: a 401 is logged out, idempotent requests are replayed.
                #expect(one.json?["egress"]?["logged_out"]?["status"] == .array([.number("401")]))
                #expect(one.json?["egress"]?["logged_out"]?["url_matches"] == .null)
                #expect(one.json?["egress"]?["logged_out"]?["body_contains"] == .null)
                #expect(one.json?["egress"]?["retry"]?.plainText == "idempotent")

                let unknown = try await world.curl("/v1/sites/nope")
                #expect(unknown.status == 404)
                #expect(unknown.errorCode == "unknown_site")
            }
        }
    }

    @Test func cookiesComeInEveryFormatAndForAURLByTheJarsRules() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                let header = try await world.curl("/v1/sites/demo/cookies")
                #expect(header.status == 200)
                // The Cookie header value and a newline.
                let value = String(header.body.dropLast())
                let headerIsTheSession = header.body.hasSuffix("\n") && value.contains("demo_session=") && !value.contains("\n")
                #expect(headerIsTheSession)
                // The header works: the demo site accepts it.
                let me = try await runProgram("/usr/bin/curl", [
                    "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Cookie: \(value)",
                    world.server.baseURL.absoluteString + "/api/me",
                ])
                #expect(me.outputText == "200")

                let json = try await world.curl("/v1/sites/demo/cookies?format=json")
                guard case .array(let cookies)? = json.json else {
                    Issue.record("json format is not an array")
                    return
                }
                #expect(cookies.compactMap { $0["name"]?.plainText } == ["demo_csrf", "demo_session"])

                let netscape = try await world.curl("/v1/sites/demo/cookies?format=netscape")
                // HttpOnly cookies are lines with the `#HttpOnly_` prefix, as curl writes them.
                let netscapeLines = netscape.body.split(separator: "\n").filter {
                    $0.split(separator: "\t", omittingEmptySubsequences: false).count == 7
                }
                #expect(netscapeLines.count == 2)

                let playwright = try await world.curl("/v1/sites/demo/cookies?format=playwright")
                guard case .array(let playwrightCookies)? = playwright.json?["cookies"] else {
                    Issue.record("playwright format has no cookies array")
                    return
                }
                #expect(playwrightCookies.count == 2)

                let setCookie = try await world.curl("/v1/sites/demo/cookies?format=set-cookie")
                let setCookieLines = setCookie.body.split(separator: "\n")
                let everyLineASetCookie = setCookieLines.count == 2 && setCookieLines.allSatisfy { $0.hasPrefix("Set-Cookie: demo_") }
                #expect(everyLineASetCookie)

                let base = world.server.baseURL.absoluteString
                let forSite = try await world.curl("/v1/sites/demo/cookies?url=" + Self.encoded(base + "/api/me?x=1"))
                let sameAsHeader = forSite.body == header.body
                #expect(forSite.status == 200 && sameAsHeader)
                let elsewhere = try await world.curl("/v1/sites/demo/cookies?url=" + Self.encoded("https://example.com/"))
                #expect(elsewhere.status == 200)
                let noCookieElsewhere = elsewhere.body == "\n"
                #expect(noCookieElsewhere)

                for (query, parameter) in [
                    ("format=yaml", "format"), ("min_valid=soon", "min_valid"), ("wait=-1s", "wait"), ("url=ftp://x/", "url"),
                    ("color=blue", "color"),
                ] {
                    let bad = try await world.curl("/v1/sites/demo/cookies?" + query)
                    #expect(bad.status == 400, "\(query)")
                    #expect(bad.errorCode == "bad_request")
                    #expect(bad.json?["error"]?["message"]?.plainText.contains("'\(parameter)'") == true, "\(query)")
                }
            }
            let values = try await world.storedCookieValues(["demo"])
            #expect(!values.isEmpty)
            let leaked = world.logs.all.filter { line in values.contains { line.contains($0) } }.count
            #expect(leaked == 0, "\(leaked) log lines hold a cookie value")
        }
    }

    @Test func minValidStartsOneLoginThatConcurrentWaitersShare() async throws {
        // 8 s sessions; the scheduler refreshes 1 s before the end. `min_valid=7s` is met only in the first second
        // after a login, so asking 1.5 s after one needs a new login, which every waiter shares.
        try await SocketWorld.withWorld(sessionMaxAge: 8) { world in
            await world.keeper.apply([try world.site(extra: "refresh: {before_expiry: 1s}")])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                try await Task.sleep(for: .milliseconds(1500))
                let loginsBefore = world.requests.count("POST /login")
                let answers = try await withThrowingTaskGroup(of: SocketWorld.Answer.self) { group in
                    for _ in 0..<6 {
                        group.addTask { try await world.curl("/v1/sites/demo/cookies?min_valid=7s&wait=10s") }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(answers.allSatisfy { $0.status == 200 })
                let distinct = Set(answers.map(\.body)).count
                #expect(distinct == 1, "the waiters got \(distinct) different sessions")
                #expect(world.requests.count("POST /login") == loginsBefore + 1)

                // No session can be valid for an hour: a login starts, and without wait the answer is 503 at once.
                let tooLong = try await world.curl("/v1/sites/demo/cookies?min_valid=1h")
                #expect(tooLong.status == 503)
                #expect(tooLong.errorCode == "no_session")
                // A wait far shorter than a login runs out: 504. (Once the login started above has ended: a wait that
                // shares a login about to end would see it end and answer 503.)
                #expect(try await Self.valid(world.keeper))
                let impatient = try await world.curl("/v1/sites/demo/cookies?min_valid=1h&wait=1ms")
                #expect(impatient.status == 504)
                #expect(impatient.errorCode == "timeout")
                // With a wait, the login ends and its session is still too short: 503 with the reason.
                let waited = try await world.curl("/v1/sites/demo/cookies?min_valid=1h&wait=10s")
                #expect(waited.status == 503)
                #expect(waited.json?["error"]?["message"]?.plainText.contains("min_valid") == true)
            }
        }
    }

    @Test func aSiteThatIsDownIsNotLoggedInByClients() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                let down = try await runProgram(
                    "/usr/bin/curl", ["-s", "-X", "POST", world.server.baseURL.absoluteString + "/_control/down?enabled=true"])
                #expect(down.status == 0)
                #expect(try await waitUntil(.seconds(4)) { await world.keeper.snapshot(of: "demo")?.status.siteDown == true })
                let logins = world.requests.count("POST /login")
                // The stored session is still served while the site is down ...
                #expect(try await world.curl("/v1/sites/demo/cookies").status == 200)
                // ... but a client asking for more gets 503 at once, and no login is tried.
                let answer = try await world.curl("/v1/sites/demo/cookies?min_valid=2h&wait=2s")
                #expect(answer.status == 503)
                #expect(answer.errorCode == "no_session")
                #expect(world.requests.count("POST /login") == logins)
            }
        }
    }

    @Test func aWaitForASiteWithoutSessionYetEndsWithTheFirstLogin() async throws {
        try await SocketWorld.withWorld { world in
            try await world.serving(world.socketServer()) {
                await world.keeper.apply([try world.site()])
                let answer = try await world.curl("/v1/sites/demo/cookies?wait=10s")
                #expect(answer.status == 200)
                let isTheSession = answer.body.contains("demo_session=")
                #expect(isTheSession)
                #expect(world.requests.count("POST /login") == 1)
            }
        }
    }

    @Test func refreshReportAndReloadAnswerAsDocumented() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                let first = try #require(await world.keeper.record(for: "demo"))
                let started = try await world.curl("POST", "/v1/sites/demo/refresh")
                #expect(started.status == 202)
                #expect(started.json?["status"]?.plainText == "started")
                #expect(try await waitUntil(.seconds(5)) {
                    await world.keeper.record(for: "demo")?.lastLogin ?? .distantPast > first.lastLogin
                })

                let before = try #require(await world.keeper.record(for: "demo"))
                let waited = try await world.curl("POST", "/v1/sites/demo/refresh?wait=10s")
                #expect(waited.status == 200)
                #expect(waited.json?["state"]?.plainText == "valid")
                #expect(waited.json?["name"]?.plainText == "demo")
                // The login it waited for, and whether a session is served now.
                #expect(waited.json?["login"]?["outcome"]?.plainText == "ok")
                #expect(waited.json?["login"]?["error"] == .null)
                #expect(waited.json?["session_served"] == .bool(true))
                #expect(await world.keeper.record(for: "demo")?.lastLogin ?? .distantPast > before.lastLogin)

                let checksBefore = world.requests.count("GET /api/me")
                let report = try await world.curl("POST", "/v1/sites/demo/report?status=401")
                #expect(report.status == 202)
                #expect(report.json?["status"]?.plainText == "checking")
                let again = try await world.curl("POST", "/v1/sites/demo/report?status=401")
                #expect(again.status == 202)
                #expect(again.json?["status"]?.plainText == "ignored")
                #expect(try await waitUntil(.seconds(3)) { world.requests.count("GET /api/me") > checksBefore })
                let badStatus = try await world.curl("POST", "/v1/sites/demo/report?status=abc")
                #expect(badStatus.status == 400)

                let reload = try await world.curl("POST", "/v1/reload")
                #expect(reload.status == 202)
                #expect(world.reloads.count == 1)
            }
        }
    }

    @Test func setCookiePassesTheJarAndIsStoredAndServed() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                let url = Self.encoded(world.server.baseURL.absoluteString + "/account")
                let body = "Set-Cookie: rotated=handed-back-value-1234; Path=/\nelsewhere=x; Domain=example.com\n"
                let answer = try await world.curl("POST", "/v1/sites/demo/set-cookie?url=" + url, body: body)
                #expect(answer.status == 200)
                #expect(answer.json?["accepted"]?.plainText == "1")
                #expect(answer.json?["rejected"]?.plainText == "1")
                let header = try await world.curl("/v1/sites/demo/cookies")
                let served = header.body.contains("rotated=handed-back-value-1234")
                #expect(served)
                let stored = try await VaultSessionStore(vault: world.vault).load(site: "demo")
                let inVault = stored?.cookies.contains { $0.name == "rotated" } ?? false
                #expect(inVault)

                let missingURL = try await world.curl("POST", "/v1/sites/demo/set-cookie", body: "a=b")
                #expect(missingURL.status == 400)
                let tooLarge = try await world.curl(
                    "POST", "/v1/sites/demo/set-cookie?url=" + url, body: String(repeating: "a=b\n", count: 20_000))
                #expect(tooLarge.status == 413)
                #expect(tooLarge.errorCode == "too_large")
            }
            let leaked = world.logs.all.filter { $0.contains("handed-back-value-1234") }.count
            #expect(leaked == 0)
        }
    }

    @Test func unknownRoutesWrongMethodsAndDisabledSitesAreJSONErrors() async throws {
        try await SocketWorld.withWorld { world in
            let base = world.server.baseURL.absoluteString
            await world.keeper.apply([
                try world.site(), try world.site("off", extra: "enabled: false"),
                try world.site("manual", yaml: "base_url: \(base)\nlogin: manual\ncheck: {get: /api/me, every: 1h}\n"),
                try world.site("unchecked", yaml: "base_url: \(base)\nlogin: manual\n"),
            ])
            try await world.serving(world.socketServer(metrics: false)) {
                let unknown = try await world.curl("/v2/nothing")
                #expect(unknown.status == 404)
                #expect(unknown.errorCode == "not_found")
                let wrongMethod = try await world.curl("GET", "/v1/sites/demo/refresh")
                #expect(wrongMethod.status == 405)
                #expect(wrongMethod.errorCode == "method_not_allowed")
                let deleteSites = try await world.curl("DELETE", "/v1/sites")
                #expect(deleteSites.status == 405)
                let disabled = try await world.curl("/v1/sites/off/cookies")
                #expect(disabled.status == 409)
                #expect(disabled.errorCode == "disabled")
                let refreshDisabled = try await world.curl("POST", "/v1/sites/off/refresh")
                #expect(refreshDisabled.status == 409)
                // A site that logs in by hand cannot be refreshed; one without check: cannot take reports.
                let manual = try await world.curl("POST", "/v1/sites/manual/refresh")
                #expect(manual.status == 409)
                #expect(manual.errorCode == "cannot_log_in")
                let unchecked = try await world.curl("POST", "/v1/sites/unchecked/report")
                #expect(unchecked.status == 409)
                #expect(unchecked.errorCode == "no_check")
                let noMetrics = try await world.curl("/metrics")
                #expect(noMetrics.status == 404)
                #expect(noMetrics.errorCode == "not_found")
                let extra = try await world.curl("/v1/health?verbose=1")
                #expect(extra.status == 400)
            }
        }
    }

    @Test func anotherUIDIsRefusedUnlessTheSitesAccessLetsItIn() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([
                try world.site(),
                try world.site("shared", extra: "access: {uids: [65534]}"),
                try world.site("grouped", extra: "access: {groups: [users]}"),
            ])
            #expect(try await Self.valid(world.keeper, "shared"))
            #expect(try await Self.valid(world.keeper, "grouped"))
            try await world.serving(world.socketServer()) {
                let list = try await world.curl("/v1/sites", asNobody: true)
                #expect(list.status == 200)
                guard case .array(let sites)? = list.json?["sites"] else {
                    Issue.record("no sites array")
                    return
                }
                #expect(sites.compactMap { $0["name"]?.plainText } == ["shared"])

                // A site the peer may not read is, to it, a site that does not exist.
                let refused = try await world.curl("/v1/sites/demo", asNobody: true)
                #expect(refused.status == 404)
                #expect(refused.errorCode == "unknown_site")
                let refusedCookies = try await world.curl("/v1/sites/demo/cookies", asNobody: true)
                #expect(refusedCookies.status == 404)
                let refusedRefresh = try await world.curl("POST", "/v1/sites/demo/refresh", asNobody: true)
                #expect(refusedRefresh.status == 404)

                let shared = try await world.curl("/v1/sites/shared/cookies", asNobody: true)
                #expect(shared.status == 200)
                let isTheSession = shared.body.contains("demo_session=")
                #expect(isTheSession)

                // A supplementary group of the client's process counts (gid 100 is "users" on Debian).
                let asMember = try await world.curl("/v1/sites/grouped", asNobody: true, groups: [100])
                #expect(asMember.status == 200)
                let notMember = try await world.curl("/v1/sites/grouped", asNobody: true)
                #expect(notMember.status == 404)

                // What concerns every site is for those who see every site.
                #expect(try await world.curl("POST", "/v1/reload", asNobody: true).status == 403)
                #expect(try await world.curl("/metrics", asNobody: true).status == 403)
                #expect(world.reloads.count == 0)
                #expect(try await world.curl("/v1/health", asNobody: true).status == 200)

                let root = try await world.curl("/v1/sites")
                #expect(root.json?["sites"].map { if case .array(let all) = $0 { all.count } else { 0 } } == 3)
            }
        }
    }

    @Test func eventsStreamStateAndCookieChangesWithoutValues() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site(), try world.site("hidden", extra: "access: {uids: [1]}")])
            #expect(try await Self.valid(world.keeper))
            #expect(try await Self.valid(world.keeper, "hidden"))
            try await world.serving(world.socketServer()) {
                async let rootStream = world.curl("/v1/events", maxTime: 4)
                async let nobodyStream = world.curl("/v1/events", asNobody: true, maxTime: 4)
                try await Task.sleep(for: .seconds(1))
                _ = try await world.curl("POST", "/v1/sites/demo/refresh?wait=5s")
                _ = try await world.curl("POST", "/v1/sites/hidden/refresh?wait=5s")
                // curl ends the streams at --max-time; the server sees the readers go.
                let root = try await rootStream.body
                let nobody = try await nobodyStream.body
                #expect(root.hasPrefix(": subscribed"))
                #expect(root.contains("event: state\ndata: {\"site\":\"demo\""))
                #expect(root.contains("\"from\":\"valid\",\"to\":\"refreshing\""))
                #expect(root.contains("event: cookies\ndata: {\"site\":\"demo\""))
                #expect(root.contains("\"names\":[\"demo_csrf\",\"demo_session\"]"))
                #expect(root.contains("\"site\":\"hidden\""))
                #expect(root.contains("id: "))
                // nobody sees no site: only the greeting.
                #expect(nobody.hasPrefix(": subscribed"))
                #expect(!nobody.contains("event:"))
                let values = try await world.storedCookieValues(["demo", "hidden"])
                let leaked = values.contains { root.contains($0) }
                #expect(!leaked)
            }
        }
    }

    @Test func aSlowEventReaderIsDroppedNotBufferedWithoutBound() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            // A subscriber that never reads, with room for two events.
            let stream = await world.keeper.events(buffer: 2)
            for _ in 0..<3 {
                await world.keeper.refresh("demo")
                #expect(try await waitUntil(.seconds(5)) {
                    await world.keeper.snapshot(of: "demo")?.status.phase == .valid
                })
            }
            var received = 0
            for await _ in stream { received += 1 }
            // The stream ended by itself (dropped) after the two buffered events.
            #expect(received == 2)
            let warned = world.logs.all.contains { $0.contains("fell behind and was dropped") }
            #expect(warned)
        }
    }

    @Test func anEventReaderThatStopsReadingIsDroppedAndDisconnected() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            var limits = SocketServer.Limits()
            limits.eventBuffer = 4
            try await world.serving(world.socketServer(limits: limits)) {
                // A client that asks for the events and reads nothing until told to, then reads to the end.
                let go = world.folder.path("go")
                let script = """
                    s.sendall(b"GET /v1/events HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
                    print("subscribed", flush=True)
                    while not os.path.exists(sys.argv[2]):
                        time.sleep(0.05)
                    s.settimeout(10)
                    total = 0
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        total += len(chunk)
                    print("closed", total)
                    """
                async let reader = world.socketClient(script, arguments: [go])
                try await Task.sleep(for: .milliseconds(500))
                // Cookie events with long names fill the socket's buffers fast; then the reader's 4 events.
                let names = (0..<30).map { "c\($0)_" + String(repeating: "n", count: 400) }
                let url = Self.encoded(world.server.baseURL.absoluteString + "/")
                var round = 0
                while round < 120, !world.logs.all.contains(where: { $0.contains("fell behind") && $0.contains("pid=") }) {
                    round += 1
                    let body = names.map { "\($0)=r\(round); Path=/" }.joined(separator: "\n")
                    _ = try await world.curl("POST", "/v1/sites/demo/set-cookie?url=" + url, body: body)
                }
                let dropped = world.logs.all.contains { $0.contains("fell behind") && $0.contains("pid=") }
                #expect(dropped, "not dropped after \(round) rounds")
                #expect(FileManager.default.createFile(atPath: go, contents: nil))
                let result = try await reader
                // The server closed the connection: the client read to its end instead of timing out.
                #expect(result.outputText.contains("closed"), "\(result.errorText.suffix(300))")
                // Other clients are answered meanwhile and after.
                #expect(try await world.curl("/v1/health").status == 200)
            }
        }
    }

    @Test func idleAndOversizedRequestsAreCutOffWithoutDelayingOthers() async throws {
        try await SocketWorld.withWorld { world in
            var limits = SocketServer.Limits()
            limits.idleTimeout = .seconds(1)
            try await world.serving(world.socketServer(limits: limits)) {
                // A client that sends half a request head and then nothing.
                let script = """
                    s.sendall(b"GET /v1/health HTTP/1.1\\r\\nHost: localhost\\r\\n")
                    start = time.monotonic()
                    s.settimeout(10)
                    data = s.recv(65536)
                    print("closed" if not data else "answered", round(time.monotonic() - start, 1))
                    """
                async let slow = world.socketClient(script)
                try await Task.sleep(for: .milliseconds(200))
                // Meanwhile everyone else is answered.
                let started = ContinuousClock.now
                #expect(try await world.curl("/v1/health").status == 200)
                #expect(ContinuousClock.now - started < .seconds(1))
                let result = try await slow
                let words = result.outputText.split(separator: " ")
                #expect(words.first == "closed", "\(result.outputText) \(result.errorText.suffix(200))")
                let seconds = words.last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 99
                #expect(seconds < 4, "closed after \(seconds) s")

                // More header fields than allowed: refused, never answered as a normal request.
                let headers = (0..<100).flatMap { ["-H", "X-Filler-\($0): v"] }
                let crowded = try await runProgram("/usr/bin/curl", [
                    "-s", "--unix-socket", world.socketPath, "-o", "/dev/null", "-w", "%{http_code}",
                ] + headers + ["http://localhost/v1/health"])
                #expect(crowded.outputText != "200", "\(crowded.outputText)")
                // A header larger than allowed, likewise.
                let huge = try await runProgram("/usr/bin/curl", [
                    "-s", "--unix-socket", world.socketPath, "-o", "/dev/null", "-w", "%{http_code}",
                    "-H", "X-Huge: " + String(repeating: "h", count: 20_000), "http://localhost/v1/health",
                ])
                #expect(huge.outputText != "200", "\(huge.outputText)")
                #expect(try await world.curl("/v1/health").status == 200)
            }
        }
    }

    @Test func metricsCarryEveryFamily() async throws {
        try await SocketWorld.withWorld { world in
            try await world.serving(world.socketServer()) {
                // The site comes while the server runs, so its first login is counted.
                await world.keeper.apply([try world.site()])
                _ = try await world.curl("/v1/sites/demo/cookies?wait=10s")
                _ = try await world.curl("/v1/sites/nope")
                let metrics = try await world.curl("/metrics")
                #expect(metrics.status == 200)
                for family in [
                    "sessionkeeper_logins_total{", "sessionkeeper_login_duration_seconds_bucket{",
                    "sessionkeeper_session_expires_in_seconds{site=\"demo\"}", "sessionkeeper_sites{state=\"valid\"} 1",
                    "sessionkeeper_socket_requests_total{route=\"/v1/sites/{name}\",status=\"404\"} 1",
                ] {
                    #expect(metrics.body.contains(family), "\(family)")
                }
                #expect(metrics.body.contains("outcome=\"ok\""))
                // The check that runs on the new session right after the login is counted by its outcome.
                #expect(try await waitUntil(.seconds(5)) {
                    let lines = (try? await world.curl("/metrics").body)?.split(separator: "\n") ?? []
                    return lines.contains { $0.hasPrefix("sessionkeeper_checks_total{") && $0.contains("site=\"demo\"") && $0.contains("outcome=\"ok\"") }
                })
                // That check is the learner's first observation (SPEC section 7): its bounds and counts are metrics, and
                // the site's JSON carries them.
                let learned = try await world.curl("/metrics").body.split(separator: "\n")
                #expect(learned.contains { $0.hasPrefix("sessionkeeper_learned_observations{") && $0.contains("what=\"idle_timeout\"") })
                #expect(learned.contains { $0.hasPrefix("sessionkeeper_learned_seconds{") && $0.contains("bound=\"alive\"") })
                let site = try await world.curl("/v1/sites/demo").body
                #expect(site.contains("\"learned\"") && site.contains("\"alive_s\"") && site.contains("\"observations\""), "\(site)")
            }
        }
    }

    @Test func theSocketFileIsSetUpProtectedReplacedWhenStaleAndRemoved() async throws {
        try await SocketWorld.withWorld { world in
            // A stale socket file, as a crashed daemon leaves it: bound, nobody listening.
            let stale = try await runProgram("/usr/bin/env", [
                "python3", "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])", world.socketPath,
            ])
            #expect(stale.status == 0)
            #expect(UnixSocket.liveness(of: world.socketPath) == .stale)
            let settings = SocketSettings(path: world.socketPath, mode: 0o600)
            try await world.serving(world.socketServer(settings: settings)) {
                let status = try Syscall.stat(world.socketPath)
                #expect(status.mode == 0o600)
                #expect(try await world.curl("/v1/health").status == 200)
                // A second server never takes the live socket over.
                await #expect(throws: SocketFileError.inUse(path: world.socketPath)) {
                    try await world.socketServer(settings: settings).run()
                }
                #expect(try await world.curl("/v1/health").status == 200)
            }
            // Graceful shutdown removed it.
            #expect(!Syscall.exists(world.socketPath))

            // A missing folder is created 0700.
            let nested = world.folder.path("fresh/run/sk.sock")
            var privateWorld = world
            privateWorld.socketPath = nested
            try await privateWorld.serving(privateWorld.socketServer(settings: SocketSettings(path: nested))) {
                let folderMode = try Syscall.stat(world.folder.path("fresh/run")).mode
                #expect(folderMode == 0o700)
            }

            // Something that is not a socket is never removed.
            #expect(FileManager.default.createFile(atPath: world.socketPath, contents: Data("keep".utf8)))
            await #expect(throws: SocketFileError.notASocket(path: world.socketPath)) {
                try await world.socketServer(settings: settings).run()
            }
            #expect(FileManager.default.contents(atPath: world.socketPath) == Data("keep".utf8))
        }
    }

    @Test func oneSiteHandsOutItsEgressRuleAsWritten() async throws {
        try await SocketWorld.withWorld { world in
            let site = try world.site(extra: """
                egress:
                  logged_out: {status: [401, 403], url_matches: '/login\\?next=', body_contains: "Please sign in"}
                  retry: never
                """)
            await world.keeper.apply([site])
            try await world.serving(world.socketServer()) {
                let one = try await world.curl("/v1/sites/demo")
                #expect(one.status == 200)
                let expected = JSONValue.object([
                    ("logged_out", .object([
                        ("status", .array([.number("401"), .number("403")])),
                        ("url_matches", .string("/login\\?next=")),
                        ("body_contains", .string("Please sign in")),
                        // A written rule replaces the default's login page and check.
                        ("login_paths", .array([])),
                        ("check", .null),
                    ])),
                    ("retry", .string("never")),
                    ("listen", .null),
                    ("listen_error", .null),
                ])
                #expect(one.json?["egress"] == expected)
            }
        }
    }

    @Test func aKeepaliveRenewalRewritesTheOutputs() async throws {
        try await SocketWorld.withWorld(sessionMaxAge: 30, sliding: true) { world in
            let output = world.folder.path("out/demo.txt")
            let site = try world.site(extra: """
                keepalive: {get: /ping, every: 1s, expect: {status: 204}}
                refresh: {before_expiry: 2s}
                outputs: [{path: \(output), format: json}]
                """)
            await world.keeper.apply([site])
            #expect(try await Self.valid(world.keeper))
            let afterLogin = try #require(FileManager.default.contents(atPath: output))
            let loginRecord = try #require(await world.keeper.record(for: "demo"))
            // Sliding sessions come back from /ping with a later expiry (the demo site's Max-Age counts in seconds).
            #expect(try await waitUntil(.seconds(6)) {
                (await world.keeper.record(for: "demo")?.expiresAt ?? .distantPast) > (loginRecord.expiresAt ?? .distantFuture)
            })
            #expect(try await waitUntil(.seconds(3)) {
                FileManager.default.contents(atPath: output) != afterLogin
            })
            #expect(world.requests.count("POST /login") == 1)
        }
    }

    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
