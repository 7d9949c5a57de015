import Foundation
import TestSupport
import Testing

/// SPEC section 3 in a running daemon: a site file that becomes writable by its group is refused like a
/// parse error, logged with the reason, and its site keeps its last good definition (here: stays enabled while
/// the refused version disables it).
@Suite(.serialized) struct SiteTrustCLITests {
    @Test func aSiteFileLoosenedWhileTheDaemonRunsKeepsItsLastGoodDefinition() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: false)
        try "state_dir: state\nvault: {key: {file: state/master.key}}\n".write(toFile: folder.path("config.yaml"), atomically: true, encoding: .utf8)
        let site = try folder.write("base_url: https://manual.example\nlogin: manual\n", to: "sites/manual.yaml", mode: 0o644)
        let binary = try #require(CLIRunner.executable).path
        let configPath = folder.path("config.yaml")
        /// The site's state as `status --json` shows it.
        @Sendable func state() -> String {
            let status = try? runProgramOnThisThread(
                binary, ["status", "--json", "--config", configPath], environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path],
                directory: folder.path)
            let text = status?.outputText ?? ""
            guard let range = text.range(of: #""state":""#) else { return "" }
            return String(text[range.upperBound...].prefix { $0 != "\"" })
        }

        let daemon = try await startProgram(
            binary, ["run", "--config", folder.path("config.yaml")], environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path],
            directory: folder.path, standardError: .mergedWithOutput)
        daemon.closeInput()
        #expect(await RunCLITests.eventually { daemon.outputText.contains("daemon ready") }, "log: \(daemon.outputText)")
        let first = await onDedicatedThread { state() }
        #expect(!first.isEmpty && first != "disabled", "state: \(first)")

        // Rewritten with group write: refused, logged with the fix; the site stays as it was (enabled).
        try folder.write("base_url: https://manual.example\nlogin: manual\nenabled: false\n", to: "sites/manual.yaml", mode: 0o664)
        let refused = await RunCLITests.eventually {
            daemon.outputText.contains("site file not loaded, keeping its last good definition: ")
                && daemon.outputText.contains("site file refused: \(site) is writable by its group (mode 0664)")
        }
        #expect(refused, "log: \(daemon.outputText)")
        #expect(await onDedicatedThread { state() } == first)

        // Tightened again: read anew, and the new definition applies.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: site)
        let reloaded = await RunCLITests.eventually { state() == "disabled" }
        #expect(reloaded, "the tightened file was not read again: \(daemon.outputText)")
        #expect(await RunCLITests.stop(daemon) == 0)
    }
}
