import Foundation
import TestSupport
import Testing
@testable import SiteConfig

@Suite struct LoaderTests {
    @Test func locatesTheConfigInSpecOrder() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.cleanUp() }
        let folder = temporary.path
        let xdg = folder + "/xdg"
        try FileManager.default.createDirectory(atPath: xdg + "/sessionkeeper", withIntermediateDirectories: true)
        try "".write(toFile: xdg + "/sessionkeeper/config.yaml", atomically: true, encoding: .utf8)
        try "".write(toFile: folder + "/other.yaml", atomically: true, encoding: .utf8)
        let work = folder + "/work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)

        var environment = ["XDG_CONFIG_HOME": xdg]
        var locator = ConfigurationLoader(environment: environment)
        #expect(try locator.locateConfig(explicit: nil, currentDirectory: work) == xdg + "/sessionkeeper/config.yaml")

        try "".write(toFile: work + "/config.yaml", atomically: true, encoding: .utf8)
        #expect(try locator.locateConfig(explicit: nil, currentDirectory: work) == work + "/config.yaml")

        environment["SESSIONKEEPER_CONFIG"] = "../other.yaml"
        locator = ConfigurationLoader(environment: environment)
        #expect(try locator.locateConfig(explicit: nil, currentDirectory: work) == folder + "/other.yaml")
        #expect(try locator.locateConfig(explicit: "config.yaml", currentDirectory: work) == work + "/config.yaml")

        #expect(throws: ConfigLocationError.self) { try locator.locateConfig(explicit: "missing.yaml", currentDirectory: work) }
        environment["SESSIONKEEPER_CONFIG"] = folder + "/missing.yaml"
        locator = ConfigurationLoader(environment: environment)
        #expect {
            try locator.locateConfig(explicit: nil, currentDirectory: work)
        } throws: { error in
            "\(error)".contains("$SESSIONKEEPER_CONFIG")
        }
    }

    @Test func noConfigAnywhereListsWhereItLooked() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.cleanUp() }
        let folder = temporary.path
        let locator = ConfigurationLoader(environment: ["HOME": folder])
        #expect {
            try locator.locateConfig(explicit: nil, currentDirectory: folder)
        } throws: { error in
            let text = "\(error)"
            return text.contains(folder + "/config.yaml") && text.contains(folder + "/.config/sessionkeeper/config.yaml")
        }
    }

    @Test func emptyConfigTakesEveryDefault() throws {
        let config = try loader.loadConfig(text: "# nothing yet\n", file: "/etc/sk/config.yaml")
        #expect(config.sitesDirectory == "/etc/sk/sites")
        #expect(config.pluginsDirectory == "/etc/sk/plugins")
        #expect(config.stateDirectory == "/etc/sk/.state")
        #expect(config.socket.path == "/etc/sk/.state/sessionkeeper.sock")
        #expect(config.vault.key == .file(path: "/etc/sk/.state/master.key"))
        #expect(config.defaults == SiteDefaults())
    }

    /// A deployment with many clients under one uid raises the socket's caps; what it leaves out keeps its default.
    @Test func socketCapsAreReadAndTheRestKeepTheirDefaults() throws {
        let text = "socket:\n  max_connections: 8192\n  max_connections_per_uid: 4096\n  request_timeout: 2s\n  replay_memory_mib: 8\n"
        let limits = try loader.loadConfig(text: text, file: "/etc/sk/config.yaml").socket.limits
        var expected = SocketLimits()
        expected.maxConnections = 8192
        expected.maxConnectionsPerUID = 4096
        expected.requestTimeout = .seconds(2)
        expected.replayMemoryBytes = 8 << 20
        #expect(SocketLimits().replayMemoryBytes == 32 << 20, "the default: 32 MiB")
        #expect(limits == expected)
        #expect(limits.maxEventReaders == 256 && limits.idleTimeout == .seconds(60))
        #expect(try loader.loadConfig(text: "# nothing\n", file: "/etc/sk/config.yaml").socket.limits == SocketLimits())
    }

    @Test func socketDefaultsToTheRuntimeDirectory() throws {
        let runtime = ConfigurationLoader(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
        let config = try runtime.loadConfig(text: "state_dir: /var/lib/sk\n", file: "/etc/sk/config.yaml")
        #expect(config.socket.path == "/run/user/1000/sessionkeeper.sock")
        #expect(config.stateDirectory == "/var/lib/sk")
    }

    /// What a client command reads of config.yaml (`state_dir` and `socket`) gives the socket `loadConfig`
    /// gives, for each way the path is set; an error in those keys is reported at its place; other keys,
    /// even wrong ones, are not read.
    @Test func theSocketLookupAgreesWithTheWholeConfig() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.cleanUp() }
        let file = temporary.path + "/config.yaml"
        let texts = [
            "",
            "# nothing yet\n",
            "state_dir: /var/lib/sk\n",
            "state_dir: state\nsocket: {path: run/sk.sock, mode: \"0660\", group: sk, allow_uids: [1000]}\n",
            "sites_dir: s\nsocket:\n  path: /tmp/x.sock\nvault: {key: {file: k}}\nlog: {level: debug}\n",
        ]
        for environment in [[:], ["XDG_RUNTIME_DIR": "/run/user/1000"]] {
            let loader = ConfigurationLoader(environment: environment)
            for text in texts {
                try text.write(toFile: file, atomically: true, encoding: .utf8)
                #expect(try loader.loadSocketSettings(at: file) == loader.loadConfig(at: file).socket, "\(text)")
            }
        }
        try "log: {level: shouting}\nstate_dir: /var/lib/sk\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: ConfigError.self) { try loader.loadConfig(at: file) }
        #expect(try loader.loadSocketSettings(at: file).path == "/var/lib/sk/sessionkeeper.sock")
        try "state_dir: /var/lib/sk\nsocket: {path: \"\", mode: \"0660\"}\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect {
            try loader.loadSocketSettings(at: file)
        } throws: { error in
            let text = "\(error)"
            return text.contains(file + ":2:") && text.contains("socket.path") && text.contains("socket.mode gives the group access")
        }
    }

    @Test func vaultKeySources() throws {
        func key(_ yaml: String) throws -> VaultKeySource {
            try loader.loadConfig(text: "vault: {key: \(yaml)}\n", file: "/etc/sk/config.yaml").vault.key
        }
        #expect(try key("{passphrase_env: SK_PASS}") == .passphraseEnvironment("SK_PASS"))
        #expect(try key("{passphrase_file: pass.txt}") == .passphraseFile(path: "/etc/sk/pass.txt"))
        #expect(try key("{passphrase_command: [pass, show, sk]}") == .passphraseCommand(["pass", "show", "sk"]))
        #expect(try key("{systemd_credential: sessionkeeper.key}") == .systemdCredential("sessionkeeper.key"))
        #expect(try key("{file: ~/k}") == .file(path: "/home/tester/k"))
    }

    @Test func loadSitesReportsBrokenFilesAndDuplicateNamesButKeepsTheOthers() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.cleanUp() }
        let folder = temporary.path
        try FileManager.default.createDirectory(atPath: folder + "/sites", withIntermediateDirectories: true)
        let site = "base_url: https://a.example\nlogin: manual\n"
        try site.write(toFile: folder + "/sites/a.yaml", atomically: true, encoding: .utf8)
        try (site + "name: a\n").write(toFile: folder + "/sites/b.yml", atomically: true, encoding: .utf8)
        try "login: manual\n".write(toFile: folder + "/sites/c.yaml", atomically: true, encoding: .utf8)
        try site.write(toFile: folder + "/sites/.hidden.yaml", atomically: true, encoding: .utf8)
        try site.write(toFile: folder + "/sites/notes.txt", atomically: true, encoding: .utf8)
        let config = loader.defaultConfig(directory: folder)
        #expect(try loader.siteFiles(in: config.sitesDirectory).map { ($0 as NSString).lastPathComponent } == ["a.yaml", "b.yml", "c.yaml"])
        let result = loader.loadSites(config: config)
        #expect(result.sites.map(\.name) == ["a"])
        #expect(result.failures.flatMap(\.diagnostics).map(\.message) == [
            "site name 'a' is already used by \(folder)/sites/a.yaml",
            "missing key 'base_url' (the site's address, such as https://wiki.example.com)",
        ])
    }

    @Test func unreadableAndNonUTF8FilesAreReportedAtTheirStart() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.cleanUp() }
        let folder = temporary.path
        try Data([0x62, 0x3A, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: folder + "/latin.yaml"))
        #expect {
            try loader.loadSite(at: folder + "/latin.yaml", config: fixtureConfig())
        } throws: { error in
            (error as? ConfigError)?.diagnostics.map(\.description) == ["\(folder)/latin.yaml:1:1: error: the file is not UTF-8 text; save it as UTF-8"]
        }
        #expect {
            try loader.loadSite(at: folder + "/absent.yaml", config: fixtureConfig())
        } throws: { error in
            (error as? ConfigError)?.diagnostics.first?.message == "cannot read the file: no such file"
        }
    }
}

@Suite struct SecretHygieneTests {
    static let secret = "hunter2-Sup3rSecret"

    @Test func literalCredentialValuesNeverAppearInDiagnostics() {
        let text = """
            base_url: https://a.example
            credentials:
              password: \(Self.secret)
              password: \(Self.secret)
              pin: {secret: \(Self.secret), env: X}
              other: [\(Self.secret)]
            login:
              steps:
                - post: /login
                  form: {p: "{{ credentials.pasword }}"}
            """
        let found = problems(text)
        #expect(found.count >= 3)
        for diagnostic in found {
            #expect(!diagnostic.description.contains(Self.secret))
        }
    }

    @Test func credentialLinesAreMarkedSensitive() {
        do {
            _ = try site("base_url: https://a.example\ncredentials:\n  password: \(Self.secret)\n  password: x\nlogin: manual\n")
            Issue.record("duplicate key should fail")
        } catch {
            #expect(error.sensitiveLines.contains(3))
            #expect(error.sensitiveLines.contains(4))
            #expect(!error.sensitiveLines.contains(1))
        }
    }
}
