import CookieJar
import Daemon
import Foundation
import JSON
import Platform
import Sessions
import SocketAPI
import Testing
import TestSupport

/// Reading is not managing (SPEC section 8), from outside the process: clients run as nobody (uid 65534, through
/// `setpriv`), a uid the site's `access` lets read, against the real server, keeper and demo site.
@Suite(.serialized) struct ReaderManagerTests {
    /// The demo site's login with a wrong password: the site answers its form again, where the account's
    /// heading is not, so each attempt is a failed login the backoff and the daily cap count.
    static func wrongPasswordYAML(_ base: URL) -> String {
        demoSiteLoginYAML(
            baseURL: base, extra: "refresh: {retry: {initial: 300ms, max: 300ms, max_failures_per_day: 3}}\naccess: {uids: [65534]}"
        )
        .replacingOccurrences(of: "\"{{ credentials.password }}\"", with: "not-the-password")
        .replacingOccurrences(of: "expect: {status: 303, cookie: demo_session}", with: "extract: {account: {xpath: \"//h1[@id='account']\"}}")
        // No check: the logins counted are those of the schedule and the reader only.
        .replacingOccurrences(of: "check: {get: /api/me, expect: {status: 200}, every: 1s}\n", with: "")
    }

    @Test func aReaderLoopingRefreshCausesNoMoreLoginsThanTheDailyCap() async throws {
        try await SocketWorld.withWorld { world in
            try await world.serving(world.socketServer()) {
                let yaml = Self.wrongPasswordYAML(world.server.baseURL)
                #expect(yaml.contains("password: not-the-password") && yaml.contains("xpath: \"//h1") && !yaml.contains("check:"))
                await world.keeper.apply([try world.site("locked", yaml: yaml)])
                // The reader asks as fast as it can, through every backoff, until the cap is reached and twenty
                // times more.
                var answers: [Int: Int] = [:]
                var afterTheCap = 0
                let end = ContinuousClock.now + .seconds(90)
                while ContinuousClock.now < end, afterTheCap < 20 {
                    let answer = try await world.curl("POST", "/v1/sites/locked/refresh", asNobody: true)
                    answers[answer.status, default: 0] += 1
                    if await world.keeper.snapshot(of: "locked")?.status.phase == .needsAttention { afterTheCap += 1 }
                }
                #expect(afterTheCap == 20, "answers: \(answers)")
                #expect(world.requests.count("POST /login") == 3, "answers: \(answers)")
                let state = await world.keeper.snapshot(of: "locked")?.status
                #expect(state?.phase == .needsAttention)
                #expect(state?.lastError?.hasPrefix("3 failed logins in 24 hours") == true, "\(state?.lastError ?? "-")")
                // Refused while backing off (409), then needs a manager once the cap is reached (403).
                #expect(Set(answers.keys).isSubset(of: [202, 403, 409]), "answers: \(answers)")

                let reader = try await world.curl("POST", "/v1/sites/locked/refresh", asNobody: true)
                #expect(reader.status == 403)
                #expect(reader.errorCode == "forbidden")
                #expect(reader.json?["error"]?["message"]?.plainText.contains("needs a manager") == true, "\(reader.body)")
                #expect(await world.keeper.snapshot(of: "locked")?.status.phase == .needsAttention)
                #expect(world.requests.count("POST /login") == 3)

                // A manager's refresh clears needs-attention and logs in at once.
                let manager = try await world.curl("POST", "/v1/sites/locked/refresh?wait=10s")
                #expect(manager.status == 200, "\(manager.body)")
                #expect(world.requests.count("POST /login") == 4)
            }
        }
    }

    @Test func aReaderMayRefreshAHealthySiteButNotSetItsCookies() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site("shared", extra: "access: {uids: [65534]}")])
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "shared")?.status.phase == .valid })
            try await world.serving(world.socketServer()) {
                let before = try await world.curl("/v1/sites/shared/cookies")
                let stored = try await VaultSessionStore(vault: world.vault).load(site: "shared")

                let url = world.server.baseURL.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let refused = try await world.curl(
                    "POST", "/v1/sites/shared/set-cookie?url=" + url, body: "demo_session=chosen-by-the-reader-0001; Path=/\n",
                    asNobody: true)
                #expect(refused.status == 403)
                #expect(refused.errorCode == "forbidden")
                #expect(refused.json?["error"]?["message"]?.plainText.contains("needs a manager") == true, "\(refused.body)")
                // Nothing served or stored changed.
                #expect(try await world.curl("/v1/sites/shared/cookies").body == before.body)
                let after = try await VaultSessionStore(vault: world.vault).load(site: "shared")
                #expect(after?.cookies.map(\.value) == stored?.cookies.map(\.value))
                #expect(!(after?.cookies.contains { $0.value == "chosen-by-the-reader-0001" } ?? true))

                // What a reader may do: read, report, and a refresh of a healthy site.
                #expect(try await world.curl("/v1/sites/shared/cookies", asNobody: true).status == 200)
                let logins = world.requests.count("POST /login")
                let refresh = try await world.curl("POST", "/v1/sites/shared/refresh?wait=10s", asNobody: true)
                #expect(refresh.status == 200, "\(refresh.body)")
                #expect(world.requests.count("POST /login") == logins + 1)
                #expect(try await world.curl("POST", "/v1/sites/shared/report", asNobody: true).status == 202)
                // What concerns every site needs a manager.
                let reload = try await world.curl("POST", "/v1/reload", asNobody: true)
                #expect(reload.status == 403)
                #expect(reload.json?["error"]?["message"]?.plainText.contains("needs a manager") == true, "\(reload.body)")
                #expect(try await world.curl("/metrics", asNobody: true).status == 403)
                #expect(world.reloads.count == 0)
            }
        }
    }

    /// Readers share the refresh budget (SPEC section 8): a `min_valid` no fresh session could satisfy answers 409
    /// with the site's session lifetime and starts nothing; twenty readers' requests that only a new login could
    /// satisfy start at most one (`refresh.min_interval`, 1m by default), the rest answered 409 with the reason.
    /// The owner (a manager) is not held to it.
    @Test func readersShareTheRefreshBudget() async throws {
        try await SocketWorld.withWorld(sessionMaxAge: 120) { world in
            await world.keeper.apply([try world.site("shared", extra: "refresh: {before_expiry: 10s}\naccess: {uids: [65534]}")])
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "shared")?.status.phase == .valid })
            try await world.serving(world.socketServer()) {
                let logins = world.requests.count("POST /login")
                let tooLong = try await world.curl("/v1/sites/shared/cookies?min_valid=3650d&wait=10s", asNobody: true)
                #expect(tooLong.status == 409, "\(tooLong.body)")
                #expect(tooLong.errorCode == "cannot_log_in")
                let message = tooLong.json?["error"]?["message"]?.plainText ?? ""
                #expect(message.contains("min_valid 3650d is not less than the site's session lifetime (1m5") ||
                        message.contains("min_valid 3650d is not less than the site's session lifetime (2m)"), "\(message)")
                #expect(world.requests.count("POST /login") == logins)

                // 115s of a 120s session: only a session younger than 5s satisfies it.
                let fresh = { @Sendable () async -> Bool in world.keeper.servedNow("shared", minValid: .seconds(115)) != nil }
                #expect(try await waitUntil(.seconds(10)) { !(await fresh()) })
                let first = try await world.curl("/v1/sites/shared/cookies?min_valid=115s&wait=10s", asNobody: true)
                #expect(first.status == 200, "\(first.body)")
                #expect(world.requests.count("POST /login") == logins + 1)
                #expect(try await waitUntil(.seconds(10)) { !(await fresh()) })
                var answers: [Int: Int] = [:]
                var reasons: Set<String> = []
                for _ in 0..<20 {
                    let answer = try await world.curl("/v1/sites/shared/cookies?min_valid=115s&wait=10s", asNobody: true)
                    answers[answer.status, default: 0] += 1
                    reasons.insert(answer.json?["error"]?["message"]?.plainText ?? answer.body)
                }
                #expect(answers == [409: 20], "answers: \(answers) \(reasons)")
                #expect(reasons.allSatisfy { $0.contains("readers may start one login per 1m (refresh.min_interval)") }, "\(reasons)")
                #expect(world.requests.count("POST /login") == logins + 1)

                // The owner manages the site: its min_valid logs in as before.
                let before = world.requests.count("POST /login")
                let owner = try await world.curl("/v1/sites/shared/cookies?min_valid=115s&wait=10s")
                #expect(owner.status == 200, "\(owner.body)")
                #expect(world.requests.count("POST /login") == before + 1)
            }
        }
    }

    /// A reader's `min_valid` never moves a `login: manual` site: no login can start, and the site is not put to
    /// wait for a person (a manager's is, as before: only a person can give it a longer session).
    @Test func aReadersMinValidNeverMovesAManualSite() async throws {
        try await SocketWorld.withWorld { world in
            let host = world.server.baseURL.host ?? "127.0.0.1"
            let yaml = "base_url: \(world.server.baseURL.absoluteString)\nlogin: manual\ncookies: {essential: [demo_session]}\naccess: {uids: [65534]}\n"
            let now = Date()
            let record = SessionRecord(
                cookies: [Cookie(name: "demo_session", value: "imported-by-a-person-0001", domain: host, expires: now.addingTimeInterval(3600))],
                lastLogin: now.addingTimeInterval(-3600), expiresAt: now.addingTimeInterval(3600), userAgent: nil)
            try await VaultSessionStore(vault: world.vault).save(record, site: "hand")
            await world.keeper.apply([try world.site("hand", yaml: yaml)])
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "hand")?.status.phase == .valid })
            try await world.serving(world.socketServer()) {
                let reader = try await world.curl("/v1/sites/hand/cookies?min_valid=90m&wait=2s", asNobody: true)
                #expect(reader.status == 503 || reader.status == 409, "\(reader.body)")
                #expect(await world.keeper.snapshot(of: "hand")?.status.phase == .valid, "a reader moved the site")
                let owner = try await world.curl("/v1/sites/hand/cookies?min_valid=90m")
                #expect(owner.status == 503, "\(owner.body)")
                #expect(await world.keeper.snapshot(of: "hand")?.status.phase == .needsAttention, "a manager's asks a person")
            }
        }
    }

    /// A site the peer may not read answers every site route exactly as a site that does not exist: the same
    /// status line, headers and body, byte for byte, but for the value of the `Date` header, which says only
    /// when each was asked (under load the two runs may be seconds apart).
    @Test func aHiddenSiteAnswersByteForByteAsAMissingOne() async throws {
        try await SocketWorld.withWorld { world in
            let secret = try world.site("secret", extra: "access: {uids: [1]}")
            await world.keeper.apply([secret])
            try await world.serving(world.socketServer()) {
                let url = world.server.baseURL.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let requests = [
                    "GET /v1/sites/secret", "GET /v1/sites/secret/cookies", "GET /v1/sites/secret/cookies?format=bogus",
                    "GET /v1/sites/secret/cookies?wait=1s&min_valid=1h", "POST /v1/sites/secret/refresh",
                    "POST /v1/sites/secret/refresh?wait=1s", "POST /v1/sites/secret/report?status=401",
                    "POST /v1/sites/secret/set-cookie?url=\(url)", "POST /v1/sites/secret/set-cookie",
                    "GET /v1/sites/secret/refresh",
                ]
                let hidden = try await Self.rawAnswers(world, requests)
                await world.keeper.apply([])
                let missing = try await Self.rawAnswers(world, requests)
                for (request, (shown, absent)) in zip(requests, zip(hidden, missing)) {
                    #expect(Self.date(shown).hasPrefix("date: "), "\(request): \(shown)")
                    #expect(Self.withoutDate(shown) == Self.withoutDate(absent), "\(request): \(shown) vs \(absent)")
                    #expect(shown.hasPrefix("HTTP/1.1 404 ") || shown.hasPrefix("HTTP/1.1 405 "), "\(request): \(shown)")
                }
                #expect(hidden[0].contains("\"code\":\"unknown_site\""))
            }
        }
    }

    /// The raw bytes of the answers to `requests` (`METHOD path`), each on a connection of its own, as nobody.
    static func rawAnswers(_ world: SocketWorld, _ requests: [String]) async throws -> [String] {
        let script = """
            import socket, sys
            for line in sys.argv[2:]:
                method, path = line.split(" ", 1)
                s = socket.socket(socket.AF_UNIX)
                s.connect(sys.argv[1])
                body = b"a=b\\n" if method == "POST" else b""
                s.sendall(("%s %s HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\nContent-Length: %d\\r\\n\\r\\n" % (method, path, len(body))).encode() + body)
                answer = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
                s.close()
                sys.stdout.write(answer.hex() + "\\n")
            """
        let result = try await runProgram(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, world.socketPath] + requests)
        let lines = result.outputText.split(separator: "\n").map { line in
            String(decoding: stride(from: 0, to: line.count, by: 2).compactMap { offset -> UInt8? in
                let start = line.index(line.startIndex, offsetBy: offset)
                return UInt8(line[start..<line.index(start, offsetBy: 2)], radix: 16)
            }, as: UTF8.self)
        }
        guard lines.count == requests.count else { throw WorldError("python gave \(lines.count) answers: \(result.errorText)") }
        return lines
    }

    /// The answer's `Date` header line, lowercased.
    static func date(_ answer: String) -> String {
        answer.split(separator: "\r\n").first { $0.lowercased().hasPrefix("date:") }.map { $0.lowercased() } ?? ""
    }

    /// The answer with the value of its `Date` header blanked, every other byte as it came.
    static func withoutDate(_ answer: String) -> String {
        answer.split(separator: "\r\n", omittingEmptySubsequences: false)
            .map { $0.lowercased().hasPrefix("date:") ? "date: -" : String($0) }
            .joined(separator: "\r\n")
    }
}
