import Foundation
import JSON
import SiteConfig
import TestSupport
import Testing

/// A session made by a whole-login plugin that answers as `browser-login` does: the daemon's socket shows the
/// plugin's User-Agent as the session's and serves the plugin's localStorage with the cookies in the
/// `playwright` format (only the origin asked for, with `url`).
@Suite struct BrowserSessionTests {
    /// A plugin that answers like a browser: a cookie for the site, a User-Agent, and the localStorage of the
    /// site's origin (from stdin's `base_url`).
    static let plugin = #"""
        #!/usr/bin/python3
        import json, sys
        request = json.load(sys.stdin)
        origin = request["base_url"].rstrip("/")
        json.dump({"protocol": 1,
                   "cookies": [{"name": "app_session", "value": "app-session-value-7", "domain": "127.0.0.1", "host_only": True,
                                "path": "/", "expires": "2099-01-01T00:00:00Z", "secure": False, "http_only": True, "same_site": "lax"}],
                   "user_agent": "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0 Safari/537.36",
                   "origins": [{"origin": origin, "localStorage": [{"name": "app_token", "value": "local-token-value-7"}]},
                               {"origin": "https://elsewhere.example", "localStorage": [{"name": "x", "value": "y"}]}]},
                  sys.stdout)
        """#

    @Test func theSocketServesThePluginsUserAgentAndLocalStorage() async throws {
        try await SocketWorld.withWorld { world in
            let pluginPath = world.folder.path("browser-like-plugin.py")
            try Self.plugin.write(toFile: pluginPath, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: pluginPath)
            let site = try world.site("app", yaml: """
                base_url: \(world.server.baseURL.absoluteString)
                login: {plugin: ./browser-like-plugin.py}
                cookies: {essential: [app_session]}
                """)
            await world.keeper.apply([site])
            // A plugin's login: a Python process; generous for the suite in parallel under a sanitizer.
            let valid = try await waitUntil(.seconds(30)) { await world.keeper.snapshot(of: "app")?.status.phase == .valid }
            #expect(valid)
            try await world.serving(world.socketServer()) {
                let one = try await world.curl("/v1/sites/app")
                #expect(one.json?["user_agent"]?.plainText == "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0 Safari/537.36")

                let state = try await world.curl("/v1/sites/app/cookies?format=playwright")
                #expect(state.status == 200)
                let origins = try #require(state.json?["origins"])
                let origin = world.server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                #expect(JSONPointer.resolve("/0/origin", in: origins)?.plainText == origin)
                #expect(JSONPointer.resolve("/0/localStorage/0/value", in: origins)?.plainText == "local-token-value-7")
                #expect(JSONPointer.resolve("/1/origin", in: origins)?.plainText == "https://elsewhere.example")

                let forPage = try await world.curl("/v1/sites/app/cookies?format=playwright&url=" + Self.encoded(origin + "/app/home"))
                let pageOrigins = try #require(forPage.json?["origins"])
                #expect(JSONPointer.resolve("/0/origin", in: pageOrigins)?.plainText == origin)
                #expect(JSONPointer.resolve("/1", in: pageOrigins) == nil, "only the origin of the URL asked for")

                let json = try await world.curl("/v1/sites/app/cookies?format=json")
                #expect(!json.body.contains("local-token-value-7"), "only the playwright format carries localStorage")
            }
            let leaked = world.logs.all.filter { $0.contains("local-token-value-7") || $0.contains("app-session-value-7") }.count
            #expect(leaked == 0, "\(leaked) log lines hold a secret")
        }
    }

    /// A site that binds its session to the User-Agent: `/me` answers 200 only to the User-Agent the plugin
    /// logged in with, and `/stats` counts the answers.
    static let bindingServer = #"""
        import http.server, json, sys
        counts = {"ok": 0, "refused": 0}
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/stats":
                    body, status = json.dumps(counts).encode(), 200
                else:
                    good = "HeadlessChrome" in self.headers.get("User-Agent", "") and "app_session=" in self.headers.get("Cookie", "")
                    counts["ok" if good else "refused"] += 1
                    body, status = b"{}", 200 if good else 401
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// The daemon's own checks send the session's User-Agent, not the site file's: a site that binds a
    /// session to the browser that made it keeps answering them.
    @Test func checksSendTheUserAgentTheSessionWasMadeWith() async throws {
        try await SocketWorld.withWorld { world in
            let script = world.folder.path("binding-server.py")
            try Self.bindingServer.write(toFile: script, atomically: true, encoding: .utf8)
            let server = try await PythonServer.start(script: script)
            do {
                let pluginPath = world.folder.path("browser-like-plugin.py")
                try Self.plugin.write(toFile: pluginPath, atomically: true, encoding: .utf8)
                try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: pluginPath)
                let site = try world.site("bound", yaml: """
                    base_url: \(server.url("/"))
                    http: {user_agent: SessionKeeper/1}
                    login: {plugin: ./browser-like-plugin.py}
                    check: {get: /me, every: 1s}
                    cookies: {essential: [app_session]}
                    """)
                await world.keeper.apply([site])
                // Generous for a loaded or sanitized run (a login through the plugin, then a check every second);
                // it returns at the first check that reached the site.
                let checked = try await waitUntil(.seconds(30)) {
                    let stats = try await runProgram("/usr/bin/curl", ["-s", server.url("/stats")])
                    return (try? JSONValue.parse(stats.outputText))?["ok"]?.plainText.first.map { $0 != "0" } ?? false
                }
                #expect(checked, "no check reached the site with the browser's User-Agent")
                let stats = try await runProgram("/usr/bin/curl", ["-s", server.url("/stats")])
                #expect(JSONPointer.resolve("/refused", in: try JSONValue.parse(stats.outputText)) == .number("0"))
                #expect(await world.keeper.snapshot(of: "bound")?.status.phase == .valid)
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }

    /// SPEC section 5: a plugin's standard error goes to the daemon's log, line by line, with its site and
    /// step; the line is the plugin's, its cookie value is not.
    @Test func aLoginPluginsStandardErrorIsLogged() async throws {
        try await SocketWorld.withWorld { world in
            let pluginPath = world.folder.path("talking-plugin.py")
            let talking = Self.plugin.replacingOccurrences(
                of: "import json, sys\n", with: "import json, sys\nprint('opening the sign-in page', file=sys.stderr, flush=True)\n")
            try talking.write(toFile: pluginPath, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: pluginPath)
            let site = try world.site("talking", yaml: """
                base_url: \(world.server.baseURL.absoluteString)
                login: {plugin: ./talking-plugin.py}
                cookies: {essential: [app_session]}
                """)
            await world.keeper.apply([site])
            #expect(try await waitUntil(.seconds(10)) { await world.keeper.snapshot(of: "talking")?.status.phase == .valid })
            let lines = world.logs.all.filter { $0.contains("plugin: opening the sign-in page") }
            #expect(lines.count == 1, "\(world.logs.all.suffix(5))")
            #expect(lines.first.map { $0.hasPrefix("info ") && $0.contains("site=talking") && $0.contains("step=") } == true)
            #expect(!world.logs.all.contains { $0.contains("app-session-value-7") })
            await world.keeper.stopAll()
        }
    }

    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
