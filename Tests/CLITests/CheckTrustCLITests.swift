import Foundation
import JSON
import Platform
import TestSupport
import Testing

/// A check you can trust (issue 26), with real processes: the built `sessionkeeper` against a real `demo-site`,
/// whose `/_control/` routes revoke sessions, take the site down and count its logins.
@Suite(.serialized) struct CheckTrustCLITests {
    /// The demo site's check with a marker its page never holds: a check that can never pass.
    static let neverPassingCheck = """
        check:
          get: /api/me
          expect: {status: 200, body_contains: "no such marker anywhere"}
          every: 2s
        """

    /// A site whose check can never pass logs in once, goes to needs-attention saying why and what to do, and
    /// logs in no more over a minute of `every: 2s`; `probe` and `login --check` show the check failing, and a
    /// manager's `refresh --wait` logs in once more, exit 0, before the check sends it back to waiting.
    @Test func aCheckThatCanNeverPassNeedsAttentionAfterOneLoginAndLogsInNoMore() async throws {
        try await LoginCLIWorld.with { world in
            try Self.onlyDemo(world, check: Self.neverPassingCheck)
            let daemon = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually { daemon.outputText.contains("site needs attention") }, "log: \(daemon.outputText)")
            #expect(try await Self.demoLogins(world) == 1)
            let warning = try #require(daemon.outputText.split(separator: "\n").first { $0.contains("site needs attention") })
            #expect(warning.contains("reason=check-never-passes"), "\(warning)")
            #expect(warning.contains("sessionkeeper login demo --check"), "what to do: \(warning)")

            // A minute of `every: 2s`: no login and no check.
            try await Task.sleep(for: .seconds(60))
            #expect(try await Self.demoLogins(world) == 1)
            let log = daemon.outputText
            #expect(log.components(separatedBy: "run=login").count - 1 == 1, "log: \(log)")
            #expect(log.components(separatedBy: "run=check").count - 1 == 1, "log: \(log)")

            let table = try await world.run(["status", "--config", world.configPath])
            #expect(table.status == 1, "a site needs attention: \(table.stderr)")
            #expect(table.stdout.contains("needs-attention"), "\(table.stdout)")
            #expect(table.stdout.contains("the check is wrong"), "\(table.stdout)")
            #expect(table.stdout.contains("body containing \"no such marker anywhere\""), "what it expected: \(table.stdout)")
            #expect(table.stdout.contains("demo needs attention (check-never-passes): fix the check in"), "\(table.stdout)")
            let json = try await world.run(["status", "--json", "--config", world.configPath])
            let answer = try JSONValue.parse(json.stdout)
            guard case .array(let sites)? = answer["sites"], let demo = sites.first else {
                Issue.record("no sites in \(json.stdout)")
                return
            }
            #expect(demo["attention"]?["reason"] == .string("check-never-passes"), "\(json.stdout)")
            #expect(demo["state"] == .string("needs-attention"))

            // The check by hand, on the stored session and after a login: it fails, saying what it expected.
            let probe = try await world.run(["probe", "demo", "--config", world.configPath])
            #expect(probe.status == 1, "\(probe.stdout) \(probe.stderr)")
            #expect(probe.stderr.contains("demo: the check does not pass"), "\(probe.stderr)")
            #expect(probe.stderr.contains("expected: body containing \"no such marker anywhere\""), "\(probe.stderr)")
            #expect(probe.stderr.range(of: #"sent:     GET http://127\.0\.0\.1:\d+/api/me -> 200"#, options: .regularExpression) != nil, "\(probe.stderr)")
            let checked = try await world.login(["--check"])
            #expect(checked.status == 1, "\(checked.stdout) \(checked.stderr)")
            #expect(checked.stderr.contains("logged in and stored the session, but demo: the check does not pass"), "\(checked.stderr)")

            // A manager asks: one more login, which succeeds (exit 0); its check sends the site back to waiting.
            let refreshed = try await world.run(["refresh", "demo", "--wait", "30s", "--config", world.configPath])
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            #expect(refreshed.stdout.hasPrefix("demo: logged in"), "\(refreshed.stdout)")
            #expect(await RunCLITests.eventually {
                daemon.outputText.components(separatedBy: "site needs attention").count - 1 == 2
            }, "log: \(daemon.outputText)")
            // Three logins in all: the daemon's, `login --check`'s, and the refresh.
            #expect(try await Self.demoLogins(world) == 3)

            #expect(await RunCLITests.stop(daemon) == 0)
            for output in [daemon.outputText, table.stdout, json.stdout, probe.stdout, probe.stderr, checked.stderr, refreshed.stdout] {
                #expect(!output.contains(LoginCLITests.password))
            }
        }
    }

    /// `probe` runs the check on the stored session without logging in: exit 0 on a live one, 1 with what it
    /// expected and found on a revoked one, 1 with no session; `login --check` passes with a right check.
    @Test func probeTellsALiveSessionFromARevokedOne() async throws {
        try await LoginCLIWorld.with { world in
            let none = try await world.run(["probe", "demo", "--config", world.configPath])
            #expect(none.status == 1, "\(none.stderr)")
            #expect(none.stderr.contains("no session stored for 'demo'"), "\(none.stderr)")

            let login = try await world.login(["--check"])
            #expect(login.status == 0, "\(login.stderr)")
            #expect(login.stdout.contains("demo: logged in (check GET http://127.0.0.1:\(world.port)/api/me: status 200"), "\(login.stdout)")
            let logins = try await Self.demoLogins(world)

            let live = try await world.run(["probe", "demo", "--config", world.configPath])
            #expect(live.status == 0, "\(live.stderr)")
            #expect(live.stdout.hasPrefix("demo: logged in (check GET http://127.0.0.1:\(world.port)/api/me: status 200"), "\(live.stdout)")
            #expect(live.stderr.contains("GET http://127.0.0.1:\(world.port)/api/me 200"), "\(live.stderr)")

            _ = try await Self.control(world, "revoke-all")
            let revoked = try await world.run(["probe", "demo", "--config", world.configPath])
            #expect(revoked.status == 1, "\(revoked.stdout) \(revoked.stderr)")
            #expect(revoked.stderr.contains("demo: the check does not pass"), "\(revoked.stderr)")
            #expect(revoked.stderr.contains("expected: status 200"), "\(revoked.stderr)")
            #expect(revoked.stderr.range(of: #"found:    status 4\d\d"#, options: .regularExpression) != nil, "\(revoked.stderr)")
            #expect(try await Self.demoLogins(world) == logins, "probe never logs in")

            // Down: it cannot reach the site, and says so.
            _ = try await Self.control(world, "down?enabled=true")
            let down = try await world.run(["probe", "demo", "--config", world.configPath])
            #expect(down.status == 1)
            #expect(down.stderr.contains("demo: the site cannot be reached") || down.stderr.contains("status 503"), "\(down.stderr)")

            let noCheck = world.folder.path("sites/nocheck.yaml")
            let text = try String(contentsOfFile: world.folder.path("sites/demo.yaml"), encoding: .utf8)
            try Self.withoutCheck(text).write(toFile: noCheck, atomically: true, encoding: .utf8)
            let usage = try await world.run(["probe", "nocheck", "--config", world.configPath])
            #expect(usage.status == 2, "\(usage.stderr)")
            #expect(usage.stderr.contains("has no check:"), "\(usage.stderr)")

            for output in [login.stdout, login.stderr, live.stdout, live.stderr, revoked.stderr] {
                #expect(!output.contains(LoginCLITests.password))
                #expect(!output.contains("demo_session="), "no cookie value: \(output)")
            }
        }
    }

    /// A session revoked on the server while the daemon was stopped is checked at once after the restart and
    /// replaced: 5 seconds later what is served is a session the site accepts. Then with the site down,
    /// `refresh --wait` exits 1 saying the login failed and the old session is still served.
    @Test func aRevokedRestoredSessionIsReplacedAndRefreshWaitTellsTheTruth() async throws {
        try await LoginCLIWorld.with { world in
            try Self.onlyDemo(world, check: "check:\n  get: /api/me\n  expect: {status: 200, json: {path: /user/name, equals: alice}}\n")
            let first = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually { first.outputText.contains("outcome=ok run=login site=demo") }, "log: \(first.outputText)")
            #expect(await RunCLITests.stop(first) == 0)

            _ = try await Self.control(world, "revoke-all")
            let daemon = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually(within: .seconds(5)) {
                daemon.outputText.contains("outcome=logged-out run=check site=demo")
                    && daemon.outputText.contains("outcome=ok run=login site=demo")
            }, "log: \(daemon.outputText)")
            let cookie = try await world.run(["cookie", "demo", "--format", "json", "--config", world.configPath])
            #expect(cookie.status == 0, "\(cookie.stderr)")
            let served = try JSONValue.parse(cookie.stdout)
            guard case .array(let cookies) = served, case .string(let value)? = cookies.first(where: { $0["name"] == .string("demo_session") })?["value"] else {
                Issue.record("no demo_session served")
                return
            }
            #expect(try await world.demoAccepts(sessionValue: value), "the served session is live")

            _ = try await Self.control(world, "down?enabled=true")
            let refresh = try await world.run(["refresh", "demo", "--wait", "30s", "--config", world.configPath])
            #expect(refresh.status == 1, "\(refresh.stdout) \(refresh.stderr)")
            #expect(refresh.stderr.contains("the login of 'demo' failed (site-down)"), "\(refresh.stderr)")
            #expect(refresh.stderr.contains("the old session is still served"), "\(refresh.stderr)")
            #expect(refresh.stdout.isEmpty)
            _ = try await Self.control(world, "down?enabled=false")

            #expect(await RunCLITests.stop(daemon) == 0)
            for output in [daemon.outputText, cookie.stderr, refresh.stderr] { #expect(!output.contains(LoginCLITests.password)) }
        }
    }

    /// A site file that fails to load shows in `status` with its error (file:line:column), for a manager; fixed,
    /// it leaves the list and the log says it recovered. `status` names each site's next run.
    @Test func statusShowsFailedSiteFilesAndTheNextRun() async throws {
        try await LoginCLIWorld.with { world in
            // Without learning (SPEC section 7), whose first checks come seconds apart, the check runs every 10m.
            try Self.onlyDemo(world, check: "check:\n  get: /api/me\n  every: 10m\nlearn: false\n")
            let broken = world.folder.path("sites/broken.yaml")
            try "base_url: http://127.0.0.1:9/\nlogin: manual\nchek: {get: /}\n".write(toFile: broken, atomically: true, encoding: .utf8)
            let daemon = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually { daemon.outputText.contains("outcome=ok run=check site=demo") }, "log: \(daemon.outputText)")
            let table = try await world.run(["status", "--config", world.configPath])
            #expect(table.status == 0, "\(table.stderr)")
            #expect(table.stdout.contains("site files that failed to load"), "\(table.stdout)")
            #expect(table.stdout.contains("broken.yaml:3:1: error: unknown key 'chek'"), "\(table.stdout)")
            #expect(table.stdout.range(of: #"demo +valid +in \S+ +check in (9m|10m)"#, options: .regularExpression) != nil, "\(table.stdout)")
            let json = try await world.run(["status", "--json", "--config", world.configPath])
            let answer = try JSONValue.parse(json.stdout)
            guard case .array(let failed)? = answer["failed_files"], let first = failed.first else {
                Issue.record("no failed_files in \(json.stdout)")
                return
            }
            #expect(first["file"] == .string(broken))
            guard case .array(let sites)? = answer["sites"], let demo = sites.first else {
                Issue.record("no sites in \(json.stdout)")
                return
            }
            #expect(demo["next_run"]?["kind"] == .string("check"), "\(json.stdout)")
            #expect(demo["failures"] == .number("0") && demo["retry_at"] == .null && demo["attention"] == .null, "\(json.stdout)")

            try "base_url: http://127.0.0.1:9/\nlogin: manual\ncheck: {get: /}\n".write(toFile: broken, atomically: true, encoding: .utf8)
            #expect(await RunCLITests.eventually { daemon.outputText.contains("site file loaded again") }, "log: \(daemon.outputText)")
            let fixed = try await world.run(["status", "--config", world.configPath])
            #expect(!fixed.stdout.contains("failed to load"), "\(fixed.stdout)")
            #expect(await RunCLITests.stop(daemon) == 0)
        }
    }

    /// `login -v` lists the cookies each step set (names only) and each request's query parameter names; `-vv`
    /// shows the query itself, a value that comes from a credential masked.
    @Test func verboseLoginNamesTheCookiesEachStepSetAndTheQuery() async throws {
        try await LoginCLIWorld.with { world in
            let path = world.folder.path("sites/demo.yaml")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            try text.replacingOccurrences(
                of: "      get: /login\n", with: "      get: /login\n      query: {lang: en, hint: \"{{ credentials.password }}\"}\n"
            ).write(toFile: path, atomically: true, encoding: .utf8)
            let verbose = try await world.login(["-v"])
            #expect(verbose.status == 0, "\(verbose.stderr)")
            #expect(verbose.stderr.contains("step 'submit' set cookies: demo_session"), "\(verbose.stderr)")
            #expect(verbose.stderr.contains("query parameters: lang, hint"), "\(verbose.stderr)")
            let traced = try await world.login(["-vv"])
            #expect(traced.status == 0, "\(traced.stderr)")
            #expect(traced.stderr.contains("query: lang=en&hint=•••"), "\(traced.stderr)")
            for output in [verbose.stderr, verbose.stdout, traced.stderr, traced.stdout] {
                #expect(!output.contains(LoginCLITests.password))
                #expect(!output.contains(LoginCLITests.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "-"))
            }
        }
    }

    // MARK: Helpers

    /// Leaves only the demo site, its `check:` replaced by `check`.
    static func onlyDemo(_ world: LoginCLIWorld, check: String) throws {
        try FileManager.default.removeItem(atPath: world.folder.path("sites/demo-bad.yaml"))
        let path = world.folder.path("sites/demo.yaml")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try (withoutCheck(text) + check + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The demo site's file without its `check:` block.
    static func withoutCheck(_ text: String) -> String {
        var lines: [Substring] = []
        var inCheck = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("check:") {
                inCheck = true
                continue
            }
            if inCheck && line.hasPrefix(" ") { continue }
            inCheck = false
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// POST to the demo site's `/_control/ROUTE`.
    static func control(_ world: LoginCLIWorld, _ route: String) async throws -> String {
        let result = try await runProgram("/usr/bin/curl", ["-sf", "-X", "POST", "http://127.0.0.1:\(world.port)/_control/\(route)"])
        try #require(result.status == 0, "POST /_control/\(route): \(result.errorText)")
        return result.outputText
    }

    /// The sessions the demo site has made (`/_control/stats`).
    static func demoLogins(_ world: LoginCLIWorld) async throws -> Int {
        let result = try await runProgram("/usr/bin/curl", ["-sf", "http://127.0.0.1:\(world.port)/_control/stats"])
        guard case .number(let count)? = try JSONValue.parse(result.outputText)["logins"], let logins = Int(count) else {
            throw CLIWorldError(message: "no logins in \(result.outputText)")
        }
        return logins
    }
}
