import Foundation
import TestSupport
import Testing

/// `scripts/install PREFIX` lays out what contrib/config.yaml expects: the binary in PREFIX/bin, the shipped plugins,
/// their helper library and browser-login's virtualenv in PREFIX/lib/sessionkeeper/plugins; and the installed copy
/// logs in through `browser-login` (headless chromium) against the demo site.
///
/// It installs the binary these tests were built with (SESSIONKEEPER_BINARY) rather than building a release one.
@Suite(.serialized, .disabled(if: BrowserTestSwitch.skipRequested, "SESSIONKEEPER_SKIP_BROWSER_TESTS is set: the headless-browser login is not tested"))
struct InstalledLayoutTests {
    static let shippedPlugins = ["api-key-header.sh", "browser-login", "demo-login.py", "sign-request.py"]

    @Test func anInstalledCopyLogsInThroughBrowserLogin() async throws {
        if let missing = BrowserLoginTests.missingParts { Issue.record(Comment(rawValue: missing)); return }
        let built = try #require(CLIRunner.executable).path
        let prefix = try TemporaryFolder()
        do {
            try await Self.installAndLogIn(into: prefix, built: built)
        } catch {
            await Self.remove(prefix)
            throw error
        }
        await Self.remove(prefix)
    }

    /// The installed virtualenv holds thousands of files: removed on a thread of its own, not the cooperative pool's.
    static func remove(_ prefix: TemporaryFolder) async {
        await onDedicatedThread { prefix.cleanUp() }
    }

    static func installAndLogIn(into prefix: TemporaryFolder, built: String) async throws {
        let install = try await runProgram(
            BrowserLoginTests.repository.appendingPathComponent("scripts/install").path, [prefix.path],
            environment: ProcessInfo.processInfo.environment.merging(["SESSIONKEEPER_BINARY": built]) { $1 },
            standardError: .mergedWithOutput)
        try #require(install.status == 0, "scripts/install: \(install.outputText)")

        let plugins = prefix.path("lib/sessionkeeper/plugins")
        let files = FileManager.default
        #expect(files.isExecutableFile(atPath: prefix.path("bin/sessionkeeper")))
        for plugin in Self.shippedPlugins {
            #expect(files.isExecutableFile(atPath: "\(plugins)/\(plugin)"), "\(plugin) is not installed")
        }
        #expect(files.fileExists(atPath: "\(plugins)/lib/sessionkeeper_plugin.py"))
        #expect(files.isExecutableFile(atPath: "\(plugins)/.venv/bin/python3"))
        // contrib/config.yaml names the default prefix's folder.
        let contribConfig = try String(
            contentsOf: BrowserLoginTests.repository.appendingPathComponent("contrib/config.yaml"), encoding: .utf8)
        #expect(contribConfig.contains("plugins_dir: /usr/local/lib/sessionkeeper/plugins\n"))

        try await BrowserWorld.with(binary: prefix.path("bin/sessionkeeper"), plugins: plugins) { world in
            let run = try await world.run(["login", "example-browser", "--config", world.configPath, "--verbose"])
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stdout.contains("logged in to example-browser: demo_session until "), "stdout: \(run.stdout)")
            #expect(run.stderr.contains("[login] browser-login: the browser holds demo_session"), "stderr: \(run.stderr)")
            #expect(!run.stderr.contains(BrowserLoginTests.password) && !run.stdout.contains(BrowserLoginTests.password))
        }
    }
}
