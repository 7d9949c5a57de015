import CookieJar
import Foundation
import Platform
import TestSupport
import Testing

/// The client commands (`cookie`, `status`, `refresh`, `exec`, `import`) run as a user runs them: the built
/// binary, against no daemon, against the vault, and against Fixtures/fake_socket_api.py, a fake of the
/// socket API on a real Unix socket.
@Suite(.serialized) struct ClientCommandsTests {
    /// What the fake serves as demo_session's value, before and after its cookies event. They must never
    /// show on standard error.
    static let fakeValues = ["fake-session-value-1", "fake-session-value-2"]

    // MARK: no daemon

    @Test func commandsThatNeedTheDaemonExitThreeAndSayHowToStartIt() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        for arguments in [["status"], ["status", "--json"], ["refresh", "demo"], ["refresh", "demo", "--wait", "5s"],
                          ["exec", "demo", "--signal", "HUP", "--", "true"]] {
            let run = try await world.run(arguments)
            #expect(run.status == 3, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("no daemon answers"), "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("no such socket"), "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("sessionkeeper run"), "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        // --socket wins over config.yaml; no config file is needed then.
        let named = try await world.run(["status", "--socket", world.folder.path("elsewhere.sock")], config: false)
        #expect(named.status == 3)
        #expect(named.stderr.contains(world.folder.path("elsewhere.sock")))

        // cookie without a daemon and without a stored session: nothing to print (1), saying how to get one.
        let cookie = try await world.run(["cookie", "manual"])
        #expect(cookie.status == 1, "\(cookie.stderr)")
        #expect(cookie.stderr.contains("sessionkeeper import manual FILE"), "\(cookie.stderr)")
        let unknown = try await world.run(["cookie", "nosuchsite"])
        #expect(unknown.status == 2, "\(unknown.stderr)")
    }

    @Test func cookieFallsBackToTheVaultWithANoteAndExitsThreeOnlyWhenALoginIsNeeded() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        let soon = Date().addingTimeInterval(300)
        try world.folder.write(ClientWorld.netscape(sessionExpiry: soon), to: "browser.txt")
        let imported = try await world.run(["import", "manual", "browser.txt"])
        #expect(imported.status == 0, "\(imported.stderr)")

        let header = try await world.run(["cookie", "manual"])
        #expect(header.status == 0, "\(header.stderr)")
        // The header is one request's: base_url's (https://app.example.com/), so pref (for /settings) stays out.
        #expect(header.stdout == "sid=browser-sid\n", "\(header.stdout)")
        #expect(header.stderr.contains("nothing keeps them fresh"))
        #expect(header.stderr.contains("sessionkeeper run"))

        // --url: exactly the cookies a request there carries (pref is for /settings only).
        let forURL = try await world.run(["cookie", "manual", "--url", "https://app.example.com/home"])
        #expect(forURL.stdout == "sid=browser-sid\n", "\(forURL.stdout)")
        let json = try await world.run(["cookie", "manual", "--format", "json"])
        let cookies = try CookieCodec.decode(json.stdout, as: .json, url: nil, now: Date())
        #expect(Set(cookies.map(\.name)) == ["sid", "pref"])

        // The session lasts 5 more minutes: --min-valid 1m is met, 10m needs a login, which only a daemon does.
        let oneMinute = try await world.run(["cookie", "manual", "--min-valid", "1m"])
        #expect(oneMinute.status == 0, "\(oneMinute.stderr)")
        let tenMinutes = try await world.run(["cookie", "manual", "--min-valid", "10m"])
        #expect(tenMinutes.status == 3, "\(tenMinutes.stderr)")
        #expect(tenMinutes.stderr.contains("sooner than --min-valid asks"), "\(tenMinutes.stderr)")
        #expect(tenMinutes.stdout.isEmpty)
        let badDuration = try await world.run(["cookie", "manual", "--wait", "soon"])
        #expect(badDuration.status == 2)

        for run in [header, forURL, json, oneMinute, tenMinutes] { #expect(!run.stderr.contains("browser-sid")) }
    }

    // MARK: against a fake daemon

    /// What the daemon learned of a site's sessions (SPEC section 7) shows in the table's LEARNED column and in
    /// `status SITE`; `check` warns of an explicit setting that contradicts it (a keepalive as long as the idle
    /// timeout found).
    @Test func statusShowsWhatWasLearnedAndCheckWarnsOfASettingThatContradictsIt() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try world.folder.write(
            """
            base_url: http://127.0.0.1:9
            login:
              steps:
                - get: /login
            keepalive: {get: /ping, every: 5m}
            """, to: "sites/demo.yaml")
        let alone = try await world.run(["check"])
        #expect(alone.status == 0 && !alone.stderr.contains("warning"), "no daemon, nothing learned: \(alone.stderr)")
        try await world.withFake {
            let table = try await world.run(["status"])
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.contains("LEARNED") == true, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("demo ") && $0.contains(" 15s-20s/>1m28s ") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("nosession ") && $0.contains(" off ") }, "learn: false: \(lines)")
            let one = try await world.run(["status", "demo"])
            #expect(one.stdout.contains("idle timeout: between 15s and 20s (6 observations)"), "\(one.stdout)")
            #expect(one.stdout.contains("lifetime:    over 1m28s (7 observations; no session died of it yet)"), "\(one.stdout)")
            let json = try await world.run(["status", "--json"])
            #expect(json.stdout.contains(#""alive_s": 15"#) || json.stdout.contains(#""alive_s":15"#), "\(json.stdout)")
            let check = try await world.run(["check"])
            #expect(check.status == 0, "a warning is no error: \(check.stderr)")
            #expect(check.stderr.contains("demo.yaml:5:") && check.stderr.contains("warning: keepalive.every (5m) is at least the idle timeout"),
                "\(check.stderr)")
        }
    }

    @Test func statusCookieAndRefreshAgainstTheSocketAPI() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try await world.withFake {
            let table = try await world.run(["status"])
            #expect(table.status == 1, "nosession needs attention: \(table.stderr)")
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("SITE") == true && lines.first?.contains("NEXT RUN") == true)
            #expect(lines.contains { $0.hasPrefix("demo ") && $0.contains("valid") && $0.contains("check in ") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("nosession ") && $0.contains("expected status 303, found status 200") })
            // A failing site's next run is its next attempt, with how many failed before it.
            #expect(lines.contains { $0.hasPrefix("slow ") && $0.contains("refresh in ") && $0.contains("(failure 2)") }, "\(lines)")
            // What to do for a site that waits for a person, and the files that failed to load, with their errors.
            #expect(lines.contains("nosession needs attention (credentials-refused): fix the credentials in nosession.yaml"), "\(lines)")
            #expect(lines.contains("  /etc/sessionkeeper/sites/broken.yaml:3:1: error: unknown key 'chek'"), "\(lines)")
            // A site whose loopback listener could not bind says so below the table.
            #expect(lines.contains(
                "slow: its egress listener is down (cannot listen on 127.0.0.1:8080: address already in use); the socket's proxy route still serves it"),
                "\(lines)")
            let json = try await world.run(["status", "--json"])
            #expect(json.stdout.hasPrefix(#"{"sites": ["#), "\(json.stdout)")

            let header = try await world.run(["cookie", "demo", "--url", "http://127.0.0.1/app?x=1&y=2", "--min-valid", "10m", "--wait", "2s"])
            #expect(header.status == 0, "\(header.stderr)")
            #expect(header.stdout == "demo_session=\(Self.fakeValues[0]); theme=dark\n")
            #expect(header.stderr.isEmpty)
            // The fake's chunked answer, passed through as it came.
            let chunkedJSON = try await world.run(["cookie", "demo", "--format", "json"])
            #expect(try CookieCodec.decode(chunkedJSON.stdout, as: .json, url: nil, now: Date()).map(\.name) == ["demo_session", "theme"])
            let netscape = try await world.run(["cookie", "demo", "--format", "netscape"])
            #expect(netscape.stdout == "format netscape\n")
            let requests = try String(contentsOfFile: world.folder.path("requests.log"), encoding: .utf8)
            #expect(requests.contains("GET /v1/sites/demo/cookies?format=header&url=http%3A%2F%2F127.0.0.1%2Fapp%3Fx%3D1%26y%3D2&min_valid=10m&wait=2s HTTP/1.1"), "\(requests)")

            // Errors: 503 (no session, or a cap), 504 and 403 are failures (1); an unknown site and a refused request are usage errors (2).
            for (site, extra, status, words) in [
                ("nosession", [String](), Int32(1), "no valid session for site 'nosession' yet"),
                ("slow", ["--wait", "1s"], 1, "the wait ran out"),
                ("forbidden", [], 1, "refuses site 'forbidden' to this user"),
                ("busy", [], 1, "the daemon is busy: uid 0 holds 128 connections (the cap per uid)"),
                ("nosuchsite", [], 2, "the daemon has no site 'nosuchsite'"),
                ("demo", ["--min-valid", "bogus"], 2, "--min-valid"),
            ] {
                let run = try await world.run(["cookie", site] + extra)
                #expect(run.status == status, "\(site): \(run.stderr)")
                #expect(run.stderr.contains(words), "\(site): \(run.stderr)")
                #expect(run.stdout.isEmpty)
            }
            // A misspelt site: the close name among the sites the daemon shows, said once.
            let misspelt = try await world.run(["cookie", "demoo"])
            #expect(misspelt.status == 2)
            #expect(misspelt.stderr == "sessionkeeper: the daemon has no site 'demoo'; did you mean 'demo'?\n", "\(misspelt.stderr)")

            let started = try await world.run(["refresh", "demo"])
            #expect(started.status == 0, "\(started.stderr)")
            #expect(started.stdout == "login of demo started\n")
            let waited = try await world.run(["refresh", "demo", "--wait", "5s"])
            #expect(waited.status == 0, "\(waited.stderr)")
            #expect(waited.stdout == "demo: logged in, valid until 2099-01-01T00:00:00Z\n")
            let failed = try await world.run(["refresh", "nosession", "--wait", "5s"])
            #expect(failed.status == 1)
            #expect(failed.stderr.contains("the login of 'nosession' failed (credentials-refused): expected status 303"), "\(failed.stderr)")
            #expect(failed.stderr.contains("no session is served"), "\(failed.stderr)")
            let timedOut = try await world.run(["refresh", "slow", "--wait", "1s"])
            #expect(timedOut.status == 1)
            let forbidden = try await world.run(["refresh", "forbidden"])
            #expect(forbidden.status == 1)
            #expect(try String(contentsOfFile: world.folder.path("requests.log"), encoding: .utf8).contains("POST /v1/sites/demo/refresh?wait=5s HTTP/1.1"))

            for run in [table, json, header, chunkedJSON, started, waited, failed] {
                for value in Self.fakeValues { #expect(!run.stderr.contains(value)) }
            }
        }
    }

    // MARK: exec

    @Test func execPassesTheSessionAndTheExitStatusAndRemovesTheFile() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try await world.withFake {
            let script = """
                printf '%s' "$SESSIONKEEPER_COOKIE" > cookie.out
                stat -c %a "$SESSIONKEEPER_COOKIE_FILE" > mode.out
                stat -c %a "$(dirname "$SESSIONKEEPER_COOKIE_FILE")" > folder-mode.out
                cp "$SESSIONKEEPER_COOKIE_FILE" file.out
                printf '%s|%s|%s' "$SESSIONKEEPER_USER_AGENT" "$SESSIONKEEPER_SOCKET" "$CALLER_VARIABLE" > env.out
                printf '%s' "$SESSIONKEEPER_COOKIE_FILE" > path.out
                exit 7
                """
            let run = try await world.run(["exec", "demo", "--", "sh", "-c", script], environment: ["CALLER_VARIABLE": "inherited"])
            #expect(run.status == 7, "\(run.stderr)")
            #expect(try world.read("cookie.out") == "demo_session=\(Self.fakeValues[0]); theme=dark")
            #expect(try world.read("mode.out") == "600\n")
            #expect(try world.read("folder-mode.out") == "700\n")
            let file = try CookieCodec.decode(try world.read("file.out"), as: .netscape, url: nil, now: Date())
            #expect(file.map(\.name) == ["demo_session", "theme"])
            #expect(try world.read("env.out") == "FakeAgent/1.0|\(world.socketPath)|inherited")
            let path = try world.read("path.out")
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent))

            let ok = try await world.run(["exec", "demo", "--", "true"])
            #expect(ok.status == 0, "\(ok.stderr)")
            let killed = try await world.run(["exec", "demo", "--", "sh", "-c", "kill -KILL $$"])
            #expect(killed.status == 128 + SIGKILL, "\(killed.stderr)")
            let usage = try await world.run(["exec", "demo", "--", "sh", "-c", "exit 64"])
            #expect(usage.status == 64, "the command's 64 is its own, not a usage error of sessionkeeper")
            let missing = try await world.run(["exec", "demo", "--", "/nonexistent/program"])
            #expect(missing.status == 127)
            #expect(missing.stderr.contains("cannot run /nonexistent/program"))
            let noCommand = try await world.run(["exec", "demo"])
            #expect(noCommand.status == 2)
            let forbidden = try await world.run(["exec", "forbidden", "--", "true"])
            #expect(forbidden.status == 1)

            for output in [run, ok, killed, missing] {
                for value in Self.fakeValues { #expect(!output.stderr.contains(value)) }
            }
        }
    }

    @Test func execForwardsSIGTERMSIGINTAndSIGHUPAndStillRemovesTheFile() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try await world.withFake {
            let script = """
                trap 'echo term > got.out; exit 42' TERM
                printf '%s' "$SESSIONKEEPER_COOKIE_FILE" > path.out
                echo ready > ready.out
                while :; do sleep 0.05; done
                """
            for (signal, name) in [(SIGTERM, "term"), (SIGINT, "int"), (SIGHUP, "hup")] {
                let trapped = script.replacingOccurrences(of: "echo term > got.out; exit 42' TERM", with: "echo \(name) > got.out; exit 42' \(name.uppercased())")
                try? FileManager.default.removeItem(atPath: world.folder.path("ready.out"))
                let exec = try await world.start(["exec", "demo", "--", "sh", "-c", trapped])
                #expect(await world.waitForFile("ready.out"))
                exec.send(signal)
                let status = await ClientWorld.wait(for: exec)
                #expect(status == 42, "\(name)")
                #expect(try world.read("got.out") == "\(name)\n")
                #expect(!FileManager.default.fileExists(atPath: try world.read("path.out")))
            }
        }
    }

    @Test func execWithSignalRewritesTheFileAndSignalsTheCommandOnACookieEvent() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try await world.withFake(eventDelay: 1.5) {
            let script = """
                trap 'cp "$SESSIONKEEPER_COOKIE_FILE" rotated.out; printf "%s" "$SESSIONKEEPER_COOKIE" > variable.out; exit 5' USR1
                cp "$SESSIONKEEPER_COOKIE_FILE" first.out
                while :; do sleep 0.05; done
                """
            let run = try await world.run(["exec", "demo", "--signal", "USR1", "--", "sh", "-c", script])
            #expect(run.status == 5, "\(run.stderr)")
            let first = try CookieCodec.decode(try world.read("first.out"), as: .netscape, url: nil, now: Date())
            let rotated = try CookieCodec.decode(try world.read("rotated.out"), as: .netscape, url: nil, now: Date())
            #expect(first.first { $0.name == "demo_session" }?.value == Self.fakeValues[0])
            #expect(rotated.first { $0.name == "demo_session" }?.value == Self.fakeValues[1])
            // The variable keeps the value the command started with.
            #expect(try world.read("variable.out").contains(Self.fakeValues[0]))
            for value in Self.fakeValues { #expect(!run.stderr.contains(value)) }
            let bad = try await world.run(["exec", "demo", "--signal", "NOPE", "--", "true"])
            #expect(bad.status == 2)
        }
    }

    @Test func execFallsBackToTheVaultWithoutADaemon() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try world.folder.write(ClientWorld.netscape(sessionExpiry: Date().addingTimeInterval(3600)), to: "browser.txt")
        #expect(try await world.run(["import", "manual", "browser.txt", "--user-agent", "Browser/2"]).status == 0)
        let run = try await world.run(["exec", "manual", "--url", "https://app.example.com/", "--", "sh", "-c",
                                       #"printf '%s|%s' "$SESSIONKEEPER_COOKIE" "$SESSIONKEEPER_USER_AGENT" > out"#])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try world.read("out") == "sid=browser-sid|Browser/2")
        #expect(run.stderr.contains("nothing keeps them fresh"))
        #expect(!run.stderr.contains("browser-sid"))

        // Without --url the variable is the header of a request to base_url (pref, for /settings, stays out), while
        // the file keeps every cookie.
        let plain = try await world.run(["exec", "manual", "--", "sh", "-c",
                                         #"printf '%s' "$SESSIONKEEPER_COOKIE" > out; cp "$SESSIONKEEPER_COOKIE_FILE" file.out"#])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try world.read("out") == "sid=browser-sid")
        let file = try CookieCodec.decode(try world.read("file.out"), as: .netscape, url: nil, now: Date())
        #expect(file.map(\.name).sorted() == ["pref", "sid"])
    }

    // MARK: import

    @Test(arguments: ImportCase.all)
    func importReadsEachFormatAndRefusesCookiesOfOtherDomains(_ example: ImportCase) async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try world.folder.write(example.content, to: "export")
        let run = try await world.run(["import", "manual", "export"] + example.arguments)
        #expect(run.status == 0, "\(example.name): \(run.stderr)")
        #expect(run.stdout.hasPrefix("imported 2 cookie(s) for manual"), "\(example.name): \(run.stdout)")
        #expect(run.stderr.contains("refused cookie 'tracker'"), "\(example.name): \(run.stderr)")
        #expect(!run.stderr.contains("tracker-value") && !run.stderr.contains("browser-sid"), "a value in stderr")

        let stored = try await world.run(["cookie", "manual", "--format", "json"])
        #expect(stored.status == 0, "\(stored.stderr)")
        let cookies = try CookieCodec.decode(stored.stdout, as: .json, url: nil, now: Date())
        #expect(Set(cookies.map(\.name)) == ["sid", "pref"], "\(example.name)")
        #expect(cookies.allSatisfy { $0.domain == "app.example.com" || $0.domain == "example.com" })
    }

    @Test func importRefusesAFileWithNothingForTheSiteAndKeepsTheStoredSession() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        try world.folder.write(ClientWorld.netscape(sessionExpiry: Date().addingTimeInterval(3600)), to: "good.txt")
        #expect(try await world.run(["import", "manual", "good.txt"]).status == 0)
        try world.folder.write("# Netscape HTTP Cookie File\n.evil.example.org\tTRUE\t/\tFALSE\t0\ttracker\ttracker-value\n", to: "foreign.txt")
        let run = try await world.run(["import", "manual", "foreign.txt"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("no cookie of foreign.txt was accepted"), "\(run.stderr)")
        #expect(!run.stderr.contains("tracker-value"))
        let still = try await world.run(["cookie", "manual"])
        #expect(still.stdout.contains("sid=browser-sid"))
        // A Cookie header value, as a browser's developer tools show it: host-only cookies of base_url.
        try world.folder.write("Cookie: sid=from-header; lang=en\n", to: "header.txt")
        let header = try await world.run(["import", "manual", "header.txt"])
        #expect(header.status == 0, "\(header.stderr)")
        #expect(header.stdout.hasPrefix("imported 2 cookie(s) for manual (sid, lang)") || header.stdout.hasPrefix("imported 2 cookie(s) for manual (lang, sid)"), "\(header.stdout)")
        let fromHeader = try await world.run(["cookie", "manual", "--url", "https://app.example.com/x"])
        #expect(fromHeader.stdout.contains("sid=from-header"))
        let unreadable = try await world.run(["import", "manual", "missing.txt"])
        #expect(unreadable.status == 2)
        try world.folder.write("nothing that looks like cookies\n", to: "prose.txt")
        let prose = try await world.run(["import", "manual", "prose.txt"])
        #expect(prose.status == 2)
        #expect(prose.stderr.contains("--format"))
    }
}

/// One cookie file of `import`'s test: each holds sid (the essential cookie), pref (path /settings) and
/// tracker, a cookie of another domain.
struct ImportCase: Sendable, CustomTestStringConvertible {
    var name: String
    var content: String
    var arguments: [String] = []
    var testDescription: String { name }

    static var all: [ImportCase] {
        let expiry = Date().addingTimeInterval(3600)
        let expires = CookieTime.rfc3339(expiry)
        let cookies: [(name: String, value: String, domain: String, path: String)] = [
            ("sid", "browser-sid", "app.example.com", "/"), ("pref", "compact", "example.com", "/settings"),
            ("tracker", "tracker-value", "evil.example.org", "/"),
        ]
        let json = "[" + cookies.map { cookie in
            #"{"name":"\#(cookie.name)","value":"\#(cookie.value)","domain":"\#(cookie.domain)","host_only":\#(cookie.name == "sid"),"path":"\#(cookie.path)","expires":"\#(expires)","secure":true,"http_only":true,"same_site":"lax","created":"2026-11-24T00:00:00Z","last_access":"2026-11-24T00:00:00Z"}"#
        }.joined(separator: ",") + "]"
        let playwright = #"{"cookies": ["# + cookies.map { cookie in
            #"{"name":"\#(cookie.name)","value":"\#(cookie.value)","domain":"\#(cookie.name == "sid" ? "" : ".")\#(cookie.domain)","path":"\#(cookie.path)","expires":\#(Int(expiry.timeIntervalSince1970)),"httpOnly":true,"secure":true,"sameSite":"Lax"}"#
        }.joined(separator: ",") + #"], "origins": []}"#
        let httpDate = CookieTime.httpDate(expiry)
        let dump = """
            HTTP/1.1 200 OK\r
            Content-Type: text/html\r
            Set-Cookie: sid=browser-sid; Path=/; Expires=\(httpDate); Secure; HttpOnly\r
            Set-Cookie: pref=compact; Domain=example.com; Path=/settings; Expires=\(httpDate)\r
            Set-Cookie: tracker=tracker-value; Domain=evil.example.org; Path=/\r
            \r

            """
        return [
            ImportCase(name: "netscape", content: ClientWorld.netscape(sessionExpiry: expiry)),
            ImportCase(name: "json", content: json),
            ImportCase(name: "playwright", content: playwright),
            ImportCase(name: "header dump", content: dump),
            ImportCase(name: "netscape, --format given", content: ClientWorld.netscape(sessionExpiry: expiry), arguments: ["--format", "netscape"]),
        ]
    }
}

/// A folder with config.yaml (its socket at state/api.sock), sites/demo.yaml and sites/manual.yaml
/// (`login: manual`, base_url https://app.example.com, essential cookie sid), for one test.
final class ClientWorld: Sendable {
    let folder: TemporaryFolder
    var configPath: String { folder.path("config.yaml") }
    var socketPath: String { folder.path("state/api.sock") }

    init(_ label: String = #function) throws {
        folder = try TemporaryFolder("client" + label.prefix(12))
        try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: folder.path("state"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try folder.write(
            """
            state_dir: state
            socket: {path: state/api.sock}
            vault: {key: {file: state/master.key}}
            """, to: "config.yaml")
        try folder.write(
            """
            base_url: http://127.0.0.1:9
            login:
              steps:
                - get: /login
            """, to: "sites/demo.yaml")
        try folder.write(
            """
            description: a site whose login needs a person
            base_url: https://app.example.com
            login: manual
            cookies: {essential: [sid]}
            """, to: "sites/manual.yaml")
    }

    func cleanUp() { folder.cleanUp() }

    /// cookies.txt as a browser extension exports it: sid (host-only, the essential one, expiring at
    /// `sessionExpiry`), pref for /settings, and tracker of another domain.
    static func netscape(sessionExpiry: Date) -> String {
        let expiry = Int(sessionExpiry.timeIntervalSince1970)
        return """
            # Netscape HTTP Cookie File
            app.example.com\tFALSE\t/\tTRUE\t\(expiry)\tsid\tbrowser-sid
            .example.com\tTRUE\t/settings\tFALSE\t\(expiry + 86400)\tpref\tcompact
            .evil.example.org\tTRUE\t/\tFALSE\t\(expiry)\ttracker\ttracker-value

            """
    }

    /// Runs `sessionkeeper ARGS --config config.yaml` (unless `config` is false) in the folder.
    func run(_ arguments: [String], config: Bool = true, environment: [String: String] = [:]) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable)
        let result = try await runProgram(
            binary.path, withConfig(arguments, config),
            environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path].merging(environment) { $1 }, directory: folder.path)
        return CLIRunner.Output(result)
    }

    /// `--config` goes before a `--` that ends sessionkeeper's own arguments.
    private func withConfig(_ arguments: [String], _ config: Bool) -> [String] {
        guard config else { return arguments }
        if let end = arguments.firstIndex(of: "--") {
            return Array(arguments[..<end]) + ["--config", configPath] + Array(arguments[end...])
        }
        return arguments + ["--config", configPath]
    }

    /// Starts `sessionkeeper ARGS` in the background (its output kept, standard error with it), for a test that
    /// signals it.
    func start(_ arguments: [String]) async throws -> RunningChild {
        let binary = try #require(CLIRunner.executable)
        let child = try await startProgram(
            binary.path, withConfig(arguments, true), environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path],
            directory: folder.path, standardError: .mergedWithOutput)
        child.closeInput()
        return child
    }

    /// The exit status of a started process (128+N for a signal, as a shell reports it), waited for at most 20
    /// seconds; nil when it did not end by then.
    static func wait(for child: RunningChild) async -> Int32? {
        switch await child.wait(within: .seconds(20)) {
        case .exited(let code)?: return code
        case .signaled(let signal)?: return 128 + signal
        case .timedOut?, .cancelled?, nil: return nil
        }
    }

    /// Whether the file `name` appears in the folder within 10 seconds.
    func waitForFile(_ name: String) async -> Bool {
        let path = folder.path(name)
        return await onDedicatedThread {
            for _ in 0..<200 {
                if FileManager.default.fileExists(atPath: path) { return true }
                usleep(50_000)
            }
            return false
        }
    }

    func read(_ name: String) throws -> String {
        try String(contentsOfFile: name.hasPrefix("/") ? name : folder.path(name), encoding: .utf8)
    }

    /// Runs `body` with the fake socket API listening on ``socketPath`` (requests logged to requests.log),
    /// and stops it afterwards.
    func withFake(eventDelay: Double = 1, _ body: () async throws -> Void) async throws {
        let script = try #require(Bundle.module.url(forResource: "fake_socket_api", withExtension: "py", subdirectory: "Fixtures")).path
        let server = try await UnixSocketPythonServer.start(
            script: script, socketPath: socketPath, arguments: [folder.path("requests.log"), String(eventDelay)])
        do {
            try await body()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
