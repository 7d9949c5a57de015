import Foundation
import TestSupport
import Testing

/// plugins/browser-login takes the site's `http` settings (the plugin input's `http` key, docs/PLUGINS.md), so
/// the browser's traffic goes where the site file says: `sessionkeeper login` of a site whose whole login is the
/// browser, against `odd_server.py` (its `/page` sets `pagecookie`), over plain HTTP to a made-up name pinned
/// with `http.resolve`, and over HTTPS with a private CA's certificate that only `insecure` or `ca_file` let in.
@Suite(.serialized, .disabled(if: BrowserTestSwitch.skipRequested, "SESSIONKEEPER_SKIP_BROWSER_TESTS is set: the headless-browser login is not tested"))
struct BrowserTransportTests {
    static let oddServer = BrowserLoginTests.repository.appendingPathComponent("Tests/LoginFlowTests/Fixtures/integration/odd_server.py").path

    /// A folder with config.yaml (the repository's plugins) and `sites/NAME.yaml` written by `site`.
    struct World {
        let folder: TemporaryFolder
        var configPath: String { folder.path("config.yaml") }

        init() throws {
            folder = try TemporaryFolder()
            try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
            try """
                state_dir: state
                plugins_dir: \(BrowserLoginTests.repository.appendingPathComponent("plugins").path)
                vault: {key: {file: state/master.key}}
                """.write(toFile: configPath, atomically: true, encoding: .utf8)
        }

        /// A site whose login opens `/page` in the browser and waits for `pagecookie`.
        func site(_ name: String, base: String, http: String) throws {
            try folder.write("""
                base_url: \(base)
                http: \(http)
                login:
                  plugin: browser-login
                  timeout: 90s
                  with: {url: /page, wait_for_cookie: pagecookie, timeout: 45s}
                cookies: {essential: [pagecookie]}
                """, to: "sites/\(name).yaml", mode: 0o644)
        }

        func login(_ name: String) async throws -> CLIRunner.Output {
            let binary = try #require(CLIRunner.executable)
            let result = try await runProgram(
                binary.path, ["login", name, "--config", configPath, "--verbose"],
                environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path, "LANG": "C.UTF-8"], directory: folder.path)
            return CLIRunner.Output(result)
        }
    }

    @Test func aResolvePinReachesChromium() async throws {
        if let missing = BrowserLoginTests.missingParts { Issue.record(Comment(rawValue: missing)); return }
        let world = try World()
        defer { world.folder.cleanUp() }
        let server = try await PythonServer.start(script: Self.oddServer)
        do {
            let base = "http://made-up.sessionkeeper.test:\(server.port)"
            try world.site("pinned", base: base, http: "{resolve: [\"made-up.sessionkeeper.test:\(server.port):127.0.0.1\"]}")
            let run = try await world.login("pinned")
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stderr.contains("browser-login: the site's http settings: 1 resolve pin(s)"), "stderr: \(run.stderr)")
            #expect(run.stderr.contains("browser-login: opening \(base)/page"))
            #expect(run.stdout.contains("logged in to pinned: pagecookie"), "stdout: \(run.stdout)")

            // Without the pin the made-up name leads nowhere.
            try world.site("unpinned", base: base, http: "{}")
            let unpinned = try await world.login("unpinned")
            #expect(unpinned.status != 0)
            #expect(unpinned.stderr.contains("ERR_NAME_NOT_RESOLVED"), "stderr: \(unpinned.stderr)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs the openssl command to make a certificate"))
    func insecureAndTheCAFileReachChromium() async throws {
        if let missing = BrowserLoginTests.missingParts { Issue.record(Comment(rawValue: missing)); return }
        let world = try World()
        defer { world.folder.cleanUp() }
        // A CA and a server certificate it signed: Chromium trusts the CA only through http.ca_file.
        let authority = world.folder.path("ca.pem"), authorityKey = world.folder.path("ca.key")
        let cert = world.folder.path("cert.pem"), key = world.folder.path("key.pem")
        let extensions = try world.folder.write(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n", to: "server.ext")
        for arguments in [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", authorityKey, "-out", authority, "-days", "2",
             "-subj", "/CN=SessionKeeper Test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", world.folder.path("server.csr"), "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", world.folder.path("server.csr"), "-CA", authority, "-CAkey", authorityKey, "-CAcreateserial",
             "-out", cert, "-days", "1", "-extfile", extensions],
        ] {
            let made = try await runProgram("/usr/bin/openssl", arguments, directory: world.folder.path, standardError: .mergedWithOutput)
            try #require(made.status == 0, "openssl failed: \(made.outputText)")
        }
        let server = try await PythonServer.start(script: Self.oddServer, arguments: ["--cert", cert, "--key", key])
        do {
            let base = "https://127.0.0.1:\(server.port)"
            try world.site("verified", base: base, http: "{}")
            let refused = try await world.login("verified")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("ERR_CERT_AUTHORITY_INVALID"), "stderr: \(refused.stderr)")

            try world.site("insecure", base: base, http: "{insecure: true}")
            let insecure = try await world.login("insecure")
            #expect(insecure.status == 0, "stderr: \(insecure.stderr)")
            #expect(insecure.stderr.contains("TLS verification off (http.insecure)"), "stderr: \(insecure.stderr)")

            try world.site("trusted", base: base, http: "{ca_file: \(authority)}")
            let trusted = try await world.login("trusted")
            #expect(trusted.status == 0, "stderr: \(trusted.stderr)")
            #expect(trusted.stderr.contains("the site's http settings: the CA file"), "stderr: \(trusted.stderr)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
