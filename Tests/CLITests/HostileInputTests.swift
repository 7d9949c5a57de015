import Foundation
import TestSupport
import Testing

/// Issue 10: the command line under hostile files, devices, links, sizes, encodings, a full disk and a
/// read-only state folder. Each case runs the built executable and asserts the exit status, the message
/// (in the user's words, no internal ones) and that no file changed that should not have.
@Suite(.serialized) struct HostileInputTests {
    /// Words a user must never see: Swift or Foundation internals, libcurl codes in place of a reason.
    static let internalWords = ["NSCocoaErrorDomain", "error 256", "Fatal error", "Illegal instruction", "other error", "Out of memory"]

    static func expectNoInternalWords(_ run: CLIRunner.Output, sourceLocation: SourceLocation = #_sourceLocation) {
        for word in internalWords {
            #expect(!run.stderr.contains(word) && !run.stdout.contains(word), "'\(word)' in: \(run.stderr)", sourceLocation: sourceLocation)
        }
    }

    // MARK: config.yaml that is not a config file

    @Test("a device as config.yaml is refused at once, naming what it is", arguments: ["/dev/null", "/dev/zero", "/dev/full", "/dev/urandom"])
    func deviceAsConfig(_ device: String) async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        let before = try world.snapshot()
        let started = Date()
        let run = try await world.run(["login", "demo", "--config", device])
        #expect(run.status == 2)
        #expect(run.stderr.contains("\(device):1:1: error: cannot read the file: it is a character device, not a regular file"), "\(run.stderr)")
        #expect(!run.stderr.contains("permission denied"))
        // A hang guard, not a speed target: reading /dev/zero to its end would never finish.
        #expect(Date().timeIntervalSince(started) < 120, "a device is never read to its end")
        #expect(try world.snapshot() == before)
        Self.expectNoInternalWords(run)
    }

    @Test func namedPipeAsConfigDoesNotHang() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        #expect(mkfifo(world.folder.path("fifo.yaml"), 0o600) == 0)
        let run = try await world.run(["login", "demo", "--config", "fifo.yaml"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("fifo.yaml:1:1: error: cannot read the file: it is a named pipe, not a regular file"), "\(run.stderr)")
    }

    @Test func symlinkLoopAsConfig() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.link("a.yaml", to: "b.yaml")
        try world.link("b.yaml", to: "a.yaml")
        let before = try world.snapshot()
        let run = try await world.run(["login", "demo", "--config", "a.yaml"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("a.yaml:1:1: error: cannot read the file: its path is a loop of symbolic links"), "\(run.stderr)")
        #expect(try world.snapshot() == before)
        Self.expectNoInternalWords(run)
    }

    @Test func danglingLinkFolderAndMissingFileAsConfig() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.link("dangling.yaml", to: "nowhere.yaml")
        let dangling = try await world.run(["login", "demo", "--config", "dangling.yaml"])
        #expect(dangling.status == 2)
        #expect(dangling.stderr.contains("dangling.yaml:1:1: error: cannot read the file: no such file"), "\(dangling.stderr)")

        let folder = try await world.run(["login", "demo", "--config", "sites"])
        #expect(folder.status == 2)
        #expect(folder.stderr.contains("sites:1:1: error: cannot read the file: it is a folder, not a regular file"), "\(folder.stderr)")

        let missing = try await world.run(["login", "demo", "--config", "absent.yaml"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--config: no such file"), "\(missing.stderr)")
        Self.expectNoInternalWords(missing)
    }

    @Test func oversizedLatinOneAndNULConfigs() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.write("big.yaml", "# " + String(repeating: "x", count: 2 << 20) + "\n")
        let big = try await world.run(["login", "demo", "--config", "big.yaml"])
        #expect(big.status == 2)
        #expect(big.stderr.contains("big.yaml:1:1: error: cannot read the file: it is larger than 1 MiB"), "\(big.stderr)")

        try world.write("latin.yaml", bytes: Array("state_dir: caf".utf8) + [0xE9] + Array("\n".utf8))
        let latin = try await world.run(["login", "demo", "--config", "latin.yaml"])
        #expect(latin.status == 2)
        #expect(latin.stderr.contains("latin.yaml:1:1: error: the file is not UTF-8 text; save it as UTF-8"), "\(latin.stderr)")

        try world.write("nul.yaml", bytes: Array("state_dir: st".utf8) + [0] + Array("ate\n".utf8))
        let nul = try await world.run(["login", "demo", "--config", "nul.yaml"])
        #expect(nul.status == 2)
        #expect(nul.stderr.contains("NUL byte"), "\(nul.stderr)")
    }

    // MARK: check

    @Test func checkPrintsDiagnosticsOnStderrAndCountsFiles() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.write("sites/one.yaml", "base_url: https://one.example\nlogin: {steps: [{get: /}]}\n")
        try world.write("sites/two.yaml", "base_url: https://two.example\nlogin: {steps: [{get: /}]}\n")
        try world.write("sites/bad.yaml", "base_url: https://bad.example\nlogin: {steps: [{get: /}]}\nenabeld: true\n")
        let before = try world.snapshot()
        let run = try await world.run(["check", "--config", "config.yaml"])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty, "diagnostics go to stderr: \(run.stdout)")
        #expect(run.stderr.contains("sites/bad.yaml:3:1: error: unknown key 'enabeld'"), "\(run.stderr)")
        #expect(run.stderr.contains("checked 4 files: 1 error in 1 file"), "\(run.stderr)")
        #expect(try world.snapshot() == before)
    }

    @Test func checkSiteFilesThatAreDevicesLoopsOrHuge() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.link("sites/zero.yaml", to: "/dev/zero")
        try world.link("sites/loop.yaml", to: "loop.yaml")
        try world.write("sites/huge.yaml", "base_url: https://x.example\n" + String(repeating: "# filler line\n", count: 100_000))
        let before = try world.snapshot()
        let run = try await world.run(["check", "--config", "config.yaml"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("sites/zero.yaml:1:1: error: cannot read the file: it is a character device, not a regular file"), "\(run.stderr)")
        #expect(run.stderr.contains("sites/loop.yaml:1:1: error: cannot read the file: its path is a loop of symbolic links"), "\(run.stderr)")
        #expect(run.stderr.contains("sites/huge.yaml:1:1: error: cannot read the file: it is larger than 1 MiB"), "\(run.stderr)")
        #expect(run.stderr.contains("checked 4 files: 3 errors in 3 files"), "\(run.stderr)")
        #expect(try world.snapshot() == before)
        Self.expectNoInternalWords(run)
    }

    /// SPEC section 3: site files are code. `check` refuses one that its group may change, with the reason and
    /// the fix; an `outputs:` path inside state_dir is an error at its place, a mode others may read a warning.
    @Test func checkRefusesLooseSiteFilesAndOutputsInTheStateFolder() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try world.write("sites/loose.yaml", "base_url: https://loose.example\nlogin: manual\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o664], ofItemAtPath: world.folder.path("sites/loose.yaml"))
        try world.write("sites/keyring.yaml", "base_url: https://k.example\nlogin: manual\noutputs:\n  - {path: ../state/vault/keyring, format: json}\n")
        try world.write("sites/shared.yaml", "base_url: https://s.example\nlogin: manual\noutputs: [{path: ../shared.txt, format: header, mode: \"0644\"}]\n")
        let run = try await world.run(["check", "--config", "config.yaml"])
        #expect(run.status == 1)
        let loose = world.folder.path("sites/loose.yaml")
        #expect(run.stderr.contains("sites/loose.yaml:1:1: error: site file refused: \(loose) is writable by its group (mode 0664), so they "
            + "could change what the daemon runs; run `chmod g-w \(loose)`"), "\(run.stderr)")
        #expect(run.stderr.contains("sites/keyring.yaml:4:12: error: outputs.path: \(world.folder.path("state/vault/keyring")) is inside state_dir"),
                "\(run.stderr)")
        #expect(run.stderr.contains("sites/shared.yaml:3:55: warning: outputs.mode: \"0644\" lets its group and others read"), "\(run.stderr)")
        #expect(run.stderr.contains("checked 4 files: 2 errors in 2 files, 1 warning"), "\(run.stderr)")
    }

    @Test func checkMissingFileArgumentIsAUsageError() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        let run = try await world.run(["check", "nope.yaml"])
        #expect(run.status == 2)
        #expect(run.stderr == "sessionkeeper: nope.yaml: no such file\n")
    }

    @Test func brokenConfigBringsNoBogusSitesError() async throws {
        let world = try HostileWorld(config: "state_dir: state\nsites_dir: elsewhere\nunknown_key: 1\n")
        defer { world.cleanUp() }
        let run = try await world.run(["check", "--config", "config.yaml"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("config.yaml:3:1: error: unknown key 'unknown_key'"), "\(run.stderr)")
        #expect(!run.stderr.contains("sites folder"), "\(run.stderr)")
        #expect(run.stderr.contains("the sites were not checked: fix config.yaml first"))
        #expect(run.stderr.contains("checked 1 file: 1 error in 1 file"), "\(run.stderr)")
    }

    @Test func checkHonoursSitesDir() async throws {
        let world = try HostileWorld(config: "state_dir: state\nsites_dir: elsewhere\n")
        defer { world.cleanUp() }
        try world.write("elsewhere/only.yaml", "base_url: https://only.example\nlogin: {steps: [{get: /}]}\nenabeld: 1\n")
        try world.write("sites/ignored.yaml", "this is: [not, checked")
        let run = try await world.run(["check", "--config", "config.yaml"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("elsewhere/only.yaml:3:1: error: unknown key 'enabeld'"), "\(run.stderr)")
        #expect(!run.stderr.contains("ignored.yaml"))
        #expect(run.stderr.contains("checked 2 files: 1 error in 1 file"), "\(run.stderr)")
    }

    /// On a terminal `check` shows the offending line; a literal credential on it is masked, even when the
    /// file's YAML does not parse.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a pseudo-terminal"))
    func literalCredentialIsMaskedInTheExcerpt() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        let secret = "Lit3ral-Passw0rd-Never-Shown"
        try world.write("sites/leak.yaml", """
            base_url: https://leak.example
            credentials:
              password: "\(secret)
            login: {steps: [{get: /}]}

            """)
        let binary = try #require(CLIRunner.executable).path
        let run = try await world.shell("/usr/bin/script -qec '\(binary) check --config config.yaml' /dev/null", environment: ["TERM": "dumb"])
        #expect(run.stdout.contains("sites/leak.yaml:"), "\(run.stdout)")
        #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret))
    }

    // MARK: standard output

    @Test func fullStandardOutputIsAnErrorNotACrash() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try await world.storeSecret("site/password", "value-1")
        let before = world.vaultItems()
        let run = try await world.shell(#""$SK" secret list --config config.yaml > /dev/full"#)
        #expect(run.status == 1)
        #expect(run.stderr == "sessionkeeper: cannot write to standard output: no space left on device\n", "\(run.stderr)")
        #expect(world.vaultItems() == before)
        Self.expectNoInternalWords(run)
    }

    @Test(arguments: ["--help", "--version", "help login"])
    func helpToAFullStandardOutput(_ arguments: String) async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        let run = try await world.shell("\"$SK\" \(arguments) > /dev/full")
        #expect(run.status == 1)
        #expect(run.stderr == "sessionkeeper: cannot write to standard output: no space left on device\n", "\(run.stderr)")
    }

    @Test func closedPipeIsAQuietExit() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try await world.storeSecret("site/password", "value-1")
        let run = try await world.shell(#"( sleep 0.5; "$SK" secret list --config config.yaml; echo "status=$?" >&2 ) | true"#)
        let statusLine = run.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(statusLine == "status=1" || statusLine == "status=141", "\(run.stderr)")
        #expect(!run.stderr.contains("sessionkeeper:"), "a closed pipe is not reported: \(run.stderr)")
    }

    // MARK: vault messages

    @Test func wrongKeyDeletedKeyringAndDamagedVersionByte() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        try await world.storeSecret("site/password", "value-1")
        let keyPath = world.folder.path("state/master.key")
        let key = try Data(contentsOf: URL(fileURLWithPath: keyPath))

        // Another key of the same size.
        try Data((0..<key.count).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: keyPath))
        let wrong = try await world.run(["secret", "list", "--config", "config.yaml"])
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("wrong key, or the keyring file was modified"), "\(wrong.stderr)")
        try key.write(to: URL(fileURLWithPath: keyPath))

        // A damaged format version byte is damage, not "a newer format".
        let item = try #require(world.vaultItems().first)
        let itemPath = world.folder.path("state/vault/\(item)")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: itemPath))
        let original = bytes
        bytes[4] = 0
        try bytes.write(to: URL(fileURLWithPath: itemPath))
        let damaged = try await world.run(["secret", "list", "--config", "config.yaml"])
        #expect(damaged.stderr.contains("damaged: its format version byte is 0"), "\(damaged.stderr)")
        #expect(!damaged.stderr.contains("newer"))
        try original.write(to: URL(fileURLWithPath: itemPath))

        // The keyring deleted while items remain.
        try FileManager.default.removeItem(atPath: world.folder.path("state/vault/keyring"))
        let before = try world.snapshot()
        let orphaned = try await world.run(["secret", "list", "--config", "config.yaml"])
        #expect(orphaned.status != 0)
        #expect(orphaned.stderr.contains("the keyring file was deleted but 1 vault item file(s) remain"), "\(orphaned.stderr)")
        #expect(!orphaned.stderr.contains("no vault here yet"))
        #expect(try world.snapshot() == before, "no new keyring is made beside orphaned items")
    }

    @Test func deviceAsKeyFile() async throws {
        let world = try HostileWorld(config: "state_dir: state\nvault: {key: {file: /dev/zero}}\n")
        defer { world.cleanUp() }
        let run = try await world.run(["secret", "set", "x", "--config", "config.yaml"], stdin: Data("v".utf8))
        #expect(run.status != 0)
        Self.expectNoInternalWords(run)
        #expect(!FileManager.default.fileExists(atPath: world.folder.path("state/vault/keyring")))
    }

    // MARK: disks

    @Test(.enabled(if: TmpfsMount.available, "needs root and a kernel that lets this container mount a tmpfs"))
    func fullDiskFailsWritesClearlyAndKeepsReadsWorking() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        let mount = try TmpfsMount(at: world.folder.path("state"), size: "256k")
        try await world.storeSecret("site/password", "value-1")
        mount.fill()
        let before = try world.snapshot("state/vault")

        let write = try await world.run(["secret", "set", "site/other", "--config", "config.yaml"], stdin: Data("value-2".utf8))
        #expect(write.status == 1)
        #expect(write.stderr.contains("No space left on device") || write.stderr.contains("no space left on device"), "\(write.stderr)")
        #expect(try world.snapshot("state/vault") == before, "a failed write leaves no temporary file behind")

        let check = try await world.run(["check", "--config", "config.yaml"])
        #expect(check.status == 0, "\(check.stderr)")
        // Reading the vault needs no space: the list works on the full disk and changes nothing.
        let list = try await world.run(["secret", "list", "--config", "config.yaml"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout == "site/password\n")
        #expect(try world.snapshot("state/vault") == before)
        Self.expectNoInternalWords(write)
    }

    @Test(.enabled(if: TmpfsMount.available, "needs root and a kernel that lets this container mount a tmpfs"))
    func readOnlyStateFolder() async throws {
        let world = try HostileWorld()
        defer { world.cleanUp() }
        let mount = try TmpfsMount(at: world.folder.path("state"), size: "256k")
        try await world.storeSecret("site/password", "value-1")
        try mount.makeReadOnly()
        let before = try world.snapshot()

        let check = try await world.run(["check", "--config", "config.yaml"])
        #expect(check.status == 0, "\(check.stderr)")
        let write = try await world.run(["secret", "set", "site/other", "--config", "config.yaml"], stdin: Data("value-2".utf8))
        #expect(write.status == 1 || write.status == 2)
        #expect(write.stderr.contains("Read-only file system") || write.stderr.contains("read-only file system"), "\(write.stderr)")
        #expect(try world.snapshot() == before)
        Self.expectNoInternalWords(write)
    }

    /// SITES.md describes `login: manual` with the command that seeds such a site.
    @Test func sitesDocumentPromisesNothingUnbuilt() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/SITES.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        #expect(!text.contains("picks up a new, changed or removed file\nwithin 2 seconds"))
        let manual = try #require(text.components(separatedBy: "\n\n").first { $0.hasPrefix("`login: manual`") })
        #expect(manual.contains("sessionkeeper import"))
        #expect(!manual.contains("not built yet"))
    }
}
