import Foundation
import TestSupport
import Testing

/// contrib/sessionkeeper.service and contrib/config.yaml: systemd accepts the unit as written, and the
/// config's paths are the ones the unit makes (state, socket, key), so the two never drift apart.
@Suite struct ContribTests {
    static let contrib = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contrib")

    static func unit() throws -> String {
        try String(contentsOf: contrib.appendingPathComponent("sessionkeeper.service"), encoding: .utf8)
    }

    /// `KEY=value` lines of the unit (the last one wins, as systemd reads them).
    static func settings(_ unit: String) -> [String: String] {
        var settings: [String: String] = [:]
        for line in unit.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("[") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return settings
    }

    static let systemdAnalyze = "/usr/bin/systemd-analyze"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze), "needs systemd-analyze"))
    func systemdAcceptsTheUnitWithoutAWord() async throws {
        let binary = try #require(CLIRunner.executable)
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        // verify checks that ExecStart exists: point it at the built binary.
        let unit = try Self.unit().replacingOccurrences(of: "/usr/local/bin/sessionkeeper", with: binary.path)
        let path = folder.path("sessionkeeper.service")
        try unit.write(toFile: path, atomically: true, encoding: .utf8)
        let verified = try await runProgram(Self.systemdAnalyze, ["verify", path], standardError: .mergedWithOutput)
        #expect(verified.status == 0)
        #expect(verified.outputText.isEmpty, "systemd-analyze verify: \(verified.outputText)")
    }

    @Test func theUnitIsHardenedAsINSTALLSays() throws {
        let settings = Self.settings(try Self.unit())
        #expect(settings["Type"] == "notify")
        #expect(settings["NoNewPrivileges"] == "yes")
        #expect(settings["ProtectSystem"] == "strict")
        #expect(settings["PrivateTmp"] == "yes")
        #expect(settings["ProtectHome"] == "yes")
        #expect(settings["CapabilityBoundingSet"] == "")
        #expect(settings["ExecReload"] == "/bin/kill -HUP $MAINPID", "SIGHUP reloads config.yaml and every site")
        #expect(settings["WatchdogSec"] != nil)
        #expect(settings["ReadWritePaths"] == nil, "ProtectSystem=strict leaves only StateDirectory and RuntimeDirectory writable")
    }

    /// The config's state_dir, socket and key are what StateDirectory, RuntimeDirectory and LoadCredential
    /// make; with those paths moved into a temporary folder, `check` passes and the vault opens with the
    /// credential systemd would hand over.
    @Test func theConfigMatchesTheUnitAndWorks() async throws {
        let settings = Self.settings(try Self.unit())
        let config = try String(contentsOf: Self.contrib.appendingPathComponent("config.yaml"), encoding: .utf8)
        let stateDirectory = try #require(settings["StateDirectory"])
        let runtimeDirectory = try #require(settings["RuntimeDirectory"])
        let state = "/var/lib/\(stateDirectory)"
        let runtime = "/run/\(runtimeDirectory)"
        let loadCredential: String = try #require(settings["LoadCredential"])
        let credential = String(loadCredential.prefix { $0 != ":" })
        #expect(config.contains("state_dir: \(state) "))
        #expect(config.contains("path: \(runtime)/sessionkeeper.sock "))
        #expect(config.contains("key: {systemd_credential: \(credential)}"))
        #expect(settings["ExecStart"]?.hasSuffix("--config /etc/sessionkeeper/config.yaml") == true)

        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let root = folder.path
        for sub in ["etc/sessionkeeper/sites", "plugins", "credentials"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(sub)", withIntermediateDirectories: true)
        }
        let moved = config
            .replacingOccurrences(of: "/etc/sessionkeeper", with: "\(root)/etc/sessionkeeper")
            .replacingOccurrences(of: "/usr/local/lib/sessionkeeper/plugins", with: "\(root)/plugins")
            .replacingOccurrences(of: state, with: "\(root)\(state)")
            .replacingOccurrences(of: runtime, with: "\(root)\(runtime)")
        let configPath = "\(root)/etc/sessionkeeper/config.yaml"
        try moved.write(toFile: configPath, atomically: true, encoding: .utf8)
        let key = "\(root)/credentials/\(credential)"
        #expect(FileManager.default.createFile(atPath: key, contents: Data((0..<32).map { UInt8($0 * 7 % 251) }), attributes: [.posixPermissions: 0o600]))

        let binary = try #require(CLIRunner.executable).path
        let environment = ["PATH": "/usr/bin:/bin", "HOME": root, "CREDENTIALS_DIRECTORY": "\(root)/credentials"]
        let check = try await runProgram(binary, ["check", "--config", configPath], environment: environment)
        #expect(check.status == 0, "\(check.errorText)")
        let stored = try await runProgram(
            binary, ["secret", "set", "wiki/password", "--config", configPath], environment: environment, input: Data("unit-secret".utf8))
        #expect(stored.status == 0, "\(stored.errorText)")
        #expect(stored.errorText.contains("stored secret 'wiki/password'"), "\(stored.errorText)")
        let listed = try await runProgram(binary, ["secret", "list", "--config", configPath], environment: environment)
        #expect(listed.outputText == "wiki/password\n")
        #expect(FileManager.default.fileExists(atPath: "\(root)\(state)/vault"))
    }
}
