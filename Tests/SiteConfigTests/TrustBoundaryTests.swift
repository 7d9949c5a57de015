import Foundation
import TestSupport
import Testing
@testable import SiteConfig

/// SPEC section 3, "Site files and plugins are code": site files, plugins and their folders that someone else
/// could change are refused with the reason and the fix; `outputs:` never writes into `state_dir`; no site
/// reads the vault's passphrase variable. Real files, modes and owners (the tests run as root, so `chown` works).
@Suite struct TrustBoundaryTests {
    /// A folder with `sites/`, `plugins/` (one executable plugin) and `state/`, and a config over them whose
    /// vault key is the passphrase in `SK_VAULT_PASS`.
    struct World {
        let folder: TemporaryFolder
        let config: DaemonConfig

        init(_ label: String = #function) throws {
            folder = try TemporaryFolder(label)
            for name in ["sites", "plugins", "state"] {
                try FileManager.default.createDirectory(atPath: folder.path(name), withIntermediateDirectories: true)
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path(name))
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
            try folder.write("#!/bin/sh\necho '{}'\n", to: "plugins/ok.sh", mode: 0o755)
            config = try loader.loadConfig(
                text: "sites_dir: sites\nplugins_dir: plugins\nstate_dir: state\nvault: {key: {passphrase_env: SK_VAULT_PASS}}\n",
                file: folder.path("config.yaml"))
        }

        /// Writes a site file (mode 0644) and returns its path.
        @discardableResult
        func site(_ text: String, name: String = "s.yaml", mode: Int16 = 0o644) throws -> String {
            try folder.write(text, to: "sites/" + name, mode: mode)
        }

        /// The diagnostics of loading the site file at `path` (empty when it loads).
        func problems(_ path: String) -> [ConfigDiagnostic] {
            do {
                _ = try loader.loadSite(at: path, config: config)
                return []
            } catch {
                return error.diagnostics
            }
        }
    }

    static let manual = "base_url: https://a.example\nlogin: manual\n"

    @Test func aGroupWritableSiteFileIsRefusedWithTheFix() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        let file = try world.site(Self.manual, mode: 0o664)
        let found = world.problems(file)
        #expect(found.count == 1)
        #expect(found.first?.mark == SourceMark(file: file, line: 1, column: 1))
        #expect(found.first?.message == "site file refused: \(file) is writable by its group (mode 0664), so they could change what the "
            + "daemon runs; run `chmod g-w \(file)`")

        try FileManager.default.setAttributes([.posixPermissions: 0o646], ofItemAtPath: file)
        #expect(world.problems(file).first?.message.contains("is writable by others (mode 0646)") == true)
        #expect(world.problems(file).first?.message.contains("`chmod o-w \(file)`") == true)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect(world.problems(file).isEmpty)
    }

    @Test func aSiteFileOfAnotherUserIsRefused() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        let file = try world.site(Self.manual)
        try FileManager.default.setAttributes([.ownerAccountID: 65534], ofItemAtPath: file)
        let message = try #require(world.problems(file).first?.message)
        #expect(message.hasPrefix("site file refused: \(file) belongs to uid 65534, neither this user (uid 0) nor root"))
        // Root's files are trusted whoever runs the daemon: the repository's own are root's in CI.
        try FileManager.default.setAttributes([.ownerAccountID: 0], ofItemAtPath: file)
        #expect(world.problems(file).isEmpty)
    }

    @Test func aLooseSitesFolderRefusesEveryFileInIt() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        try world.site(Self.manual, name: "a.yaml")
        try world.site(Self.manual.replacingOccurrences(of: "a.example", with: "b.example"), name: "b.yaml")
        try FileManager.default.setAttributes([.posixPermissions: 0o775], ofItemAtPath: world.folder.path("sites"))
        let result = loader.loadSites(config: world.config)
        #expect(result.sites.isEmpty)
        #expect(result.failures.count == 2)
        for failure in result.failures {
            #expect(failure.diagnostics.first?.message.contains("its folder \(world.folder.path("sites")) is writable by its group (mode 0775)") == true)
        }
        // A folder higher up that others may write is fine when it is sticky (as /tmp, above every test folder):
        // only an entry's owner may rename it there.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: world.folder.path("sites"))
        try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: world.folder.path)
        #expect(loader.loadSites(config: world.config).sites.count == 2)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: world.folder.path)
        #expect(loader.loadSites(config: world.config).sites.isEmpty)
    }

    @Test func aPluginOwnedByAnotherUserIsRefusedAtItsStep() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        let text = Self.manual.replacingOccurrences(of: "login: manual\n", with: "login: {plugin: ok.sh}\n")
        let file = try world.site(text)
        #expect(world.problems(file).isEmpty)
        let plugin = world.folder.path("plugins/ok.sh")
        try FileManager.default.setAttributes([.ownerAccountID: 65534], ofItemAtPath: plugin)
        let found = world.problems(file)
        #expect(found.map(\.mark.line) == [2])
        #expect(found.first?.message.hasPrefix("login: plugin 'ok.sh' refused: \(plugin) belongs to uid 65534") == true)
    }

    @Test func aPluginInAFolderOthersMayWriteIsRefused() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        try FileManager.default.createDirectory(atPath: world.folder.path("loose"), withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: world.folder.path("loose"))
        try world.folder.write("#!/bin/sh\necho '{}'\n", to: "loose/step.sh", mode: 0o755)
        let text = """
            base_url: https://a.example
            login:
              steps:
                - name: helper
                  plugin: ../loose/step.sh
            """
        let found = world.problems(try world.site(text))
        #expect(found.map(\.mark.line) == [5])
        #expect(found.first?.message.contains("its folder \(world.folder.path("loose")) is writable by group and others (mode 0777)") == true)
        #expect(found.first?.message.contains("`chmod go-w \(world.folder.path("loose"))`") == true)

        // The plugins folder itself, loosened: every plugin in it is refused.
        try FileManager.default.setAttributes([.posixPermissions: 0o757], ofItemAtPath: world.folder.path("plugins"))
        let named = world.problems(try world.site(Self.manual.replacingOccurrences(of: "login: manual\n", with: "login: {plugin: ok.sh}\n"), name: "t.yaml"))
        #expect(named.first?.message.contains("its folder \(world.folder.path("plugins")) is writable by others (mode 0757)") == true)
    }

    @Test func outputsInsideTheStateFolderAreRefusedWithTheirPlace() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        let state = world.folder.path("state")
        // Through a symbolic link too: `out/` leads into state/vault.
        try FileManager.default.createDirectory(atPath: state + "/vault", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: world.folder.path("out"), withDestinationPath: state + "/vault")
        let text = """
            base_url: https://a.example
            login: manual
            outputs:
              - {path: ../state/vault/keyring, format: json}
              - {path: ../out/keyring, format: json}
              - {path: ../state, format: json}
              - {path: ../statement.txt, format: json}
            """
        let file = try world.site(text)
        let found = world.problems(file)
        #expect(found.map { "\($0.mark.line):\($0.mark.column)" } == ["4:12", "5:12", "6:12"])
        #expect(found.first?.message == "outputs.path: \(state)/vault/keyring is inside state_dir (\(state)), which holds the vault and its "
            + "keyring; a site may not write there: choose a path outside it")

        // `~` is expanded before the check: a state_dir under HOME is reached through it too.
        let home = ConfigurationLoader(environment: ["HOME": world.folder.path])
        #expect {
            try home.loadSite(text: "base_url: https://a.example\nlogin: manual\noutputs: [{path: ~/state/x.txt, format: header}]\n",
                file: file, config: world.config)
        } throws: { error in
            (error as? ConfigError)?.diagnostics.first?.message.contains("is inside state_dir") == true
        }
    }

    @Test func outputsOthersMayReadLoadWithAWarning() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        let text = """
            base_url: https://a.example
            login: manual
            outputs:
              - {path: ../a.txt, format: header, mode: "0644"}
              - {path: ../b.txt, format: header, mode: "0640"}
              - {path: ../c.txt, format: header}
            """
        let site = try loader.loadSite(at: try world.site(text), config: world.config)
        #expect(site.warnings.map(\.severity) == [.warning, .warning])
        #expect(site.warnings.map { "\($0.mark.line):\($0.mark.column)" } == ["4:44", "5:44"])
        #expect(site.warnings.first?.message.contains("\"0644\" lets its group and others read the session's cookies") == true)
        #expect(site.warnings.last?.message.contains("\"0640\" lets its group read") == true)
        #expect(site.warnings.first?.description.contains(": warning: outputs.mode") == true)
    }

    @Test func theVaultsPassphraseVariableIsOutOfEveryTemplatesReach() throws {
        let world = try World()
        defer { world.folder.cleanUp() }
        let credential = """
            base_url: https://a.example
            credentials:
              token: {env: SK_VAULT_PASS}
            login: manual
            """
        let allowed = """
            base_url: https://a.example
            allow_env: [HOME, SK_VAULT_PASS]
            login: manual
            """
        let plugin = """
            base_url: https://a.example
            login:
              steps:
                - name: helper
                  plugin: ok.sh
                  env: [TZ, SK_VAULT_PASS]
            """
        let cases: [(String, String, String)] = [
            (credential, "3:16", "credentials.token.env: SK_VAULT_PASS holds the vault's passphrase"),
            (allowed, "2:19", "allow_env: SK_VAULT_PASS holds the vault's passphrase"),
            (plugin, "6:17", "step 'helper'.env: SK_VAULT_PASS holds the vault's passphrase"),
        ]
        for (index, (text, place, message)) in cases.enumerated() {
            let found = world.problems(try world.site(text, name: "p\(index).yaml"))
            #expect(found.count == 1, "\(found)")
            #expect(found.first.map { "\($0.mark.line):\($0.mark.column)" } == place)
            #expect(found.first?.message.hasPrefix(message) == true, "\(found)")
        }
        // Another variable is fine, and so is the same name when the vault has no passphrase variable.
        #expect(world.problems(try world.site(credential.replacingOccurrences(of: "SK_VAULT_PASS", with: "SITE_TOKEN"), name: "q.yaml")).isEmpty)
        var keyFile = world.config
        keyFile.vault.key = .file(path: world.folder.path("state/master.key"))
        #expect(throws: Never.self) { try loader.loadSite(at: try world.site(credential, name: "r.yaml"), config: keyFile) }
    }
}
