import Credentials
import Foundation
import Locking
import Platform
import SiteConfig
import TestSupport
import Testing
import Vault

@Suite struct TOTPTests {
    /// RFC 6238 appendix B: the seeds are the ASCII digits repeated to the hash's size.
    static let seed1 = Array("12345678901234567890".utf8)
    static let seed256 = Array("12345678901234567890123456789012".utf8)
    static let seed512 = Array("1234567890123456789012345678901234567890123456789012345678901234".utf8)

    static let vectors: [(time: TimeInterval, sha1: String, sha256: String, sha512: String)] = [
        (59, "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826"),
    ]

    @Test(arguments: 0..<6)
    func rfc6238AppendixBVectors(index: Int) {
        let vector = Self.vectors[index]
        let time = Date(timeIntervalSince1970: vector.time)
        #expect(TOTP.code(secret: Self.seed1, time: time, digits: 8, algorithm: .sha1) == vector.sha1)
        #expect(TOTP.code(secret: Self.seed256, time: time, digits: 8, algorithm: .sha256) == vector.sha256)
        #expect(TOTP.code(secret: Self.seed512, time: time, digits: 8, algorithm: .sha512) == vector.sha512)
    }

    @Test func sixDigitCodesAreTheLowDigitsAndPeriodChangesTheStep() {
        let time = Date(timeIntervalSince1970: 59)
        #expect(TOTP.code(secret: Self.seed1, time: time, digits: 6) == "287082")
        // With a 60 s period, time 59 is step 0 — the same as time 0 with 30 s.
        #expect(TOTP.code(secret: Self.seed1, time: time, period: .seconds(60))
            == TOTP.code(secret: Self.seed1, time: Date(timeIntervalSince1970: 0)))
    }

    @Test func base32DecodesAuthenticatorSecrets() {
        // RFC 4648 section 10 vectors.
        #expect(Base32.decode("MZXW6YTBOI======") == Array("foobar".utf8))
        #expect(Base32.decode("MZXW6YQ=") == Array("foob".utf8))
        #expect(Base32.decode("my") == Array("f".utf8))
        #expect(Base32.decode("GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ") == TOTPTests.seed1)
        #expect(Base32.decode("not base32!") == nil)
        #expect(Base32.decode("A") == nil)
        #expect(Base32.decode("") == nil)
    }
}

@Suite struct CredentialResolverTests {
    func site(_ entries: [CredentialEntry]) -> SiteDefinition {
        SiteDefinition(name: "wiki", file: "/sites/wiki.yaml", baseURL: URL(string: "https://wiki.example")!, credentials: entries, login: .manual)
    }

    @Test func literalEnvironmentAndVaultSecrets() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("vault-password"), for: ItemReference(.credential, "wiki/password"))
        let resolver = CredentialResolver(secrets: vault.background, environment: ["WIKI_USER": "alice"])
        let wiki = site([
            CredentialEntry(name: "username", source: .literal("alice")),
            CredentialEntry(name: "fromEnv", source: .environment("WIKI_USER")),
            CredentialEntry(name: "password", source: .secret("wiki/password")),
            CredentialEntry(name: "missing", source: .secret("wiki/nope")),
            CredentialEntry(name: "unset", source: .environment("NOPE")),
        ])
        #expect(try await resolver.value(of: "username", in: wiki) == "alice")
        #expect(try await resolver.value(of: "fromEnv", in: wiki) == "alice")
        #expect(try await resolver.value(of: "password", in: wiki) == "vault-password")
        let missing = await #expect(throws: CredentialError.self) { try await resolver.value(of: "missing", in: wiki) }
        #expect(missing?.description == "site 'wiki', credential 'missing': secret 'wiki/nope' is not in the vault; add it with `sessionkeeper secret set wiki/nope`")
        let unset = await #expect(throws: CredentialError.self) { try await resolver.value(of: "unset", in: wiki) }
        #expect(unset?.description.contains("NOPE is not set") == true)
        let undefined = await #expect(throws: CredentialError.self) { try await resolver.value(of: "other", in: wiki) }
        #expect(undefined?.description.contains("no such credential") == true)
        let noVault = await #expect(throws: CredentialError.self) {
            try await CredentialResolver(secrets: nil).resolve(.secret("x"), credential: "password", site: "wiki")
        }
        #expect(noVault?.description.contains("not open") == true)
    }

    @Test func aDamagedVaultSecretFailsNamingTheSecretAndNotTheValue() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("do-not-print-me"), for: ItemReference(.credential, "wiki/password"))
        let path = itemFiles(vault)[0]
        var content = readFile(path)
        content[content.count - 3] ^= 0x10
        writeFile(path, content)
        let error = await #expect(throws: CredentialError.self) {
            try await CredentialResolver(secrets: vault.background).resolve(.secret("wiki/password"), credential: "password", site: "wiki")
        }
        #expect(error?.description.contains("credential 'wiki/password'") == true)
        #expect(error?.description.contains("authentication failed") == true)
        #expect(error?.description.contains("do-not-print-me") == false)
    }

    @Test func filesMustNotBeReadableByOthers() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let file = try folder.write("file-secret\n", to: "secret.txt", mode: 0o600)
        let resolver = CredentialResolver(secrets: nil)
        #expect(try await resolver.resolve(.file(path: file), credential: "password", site: "wiki") == "file-secret")
        chmod(file, 0o640)
        #expect(try await resolver.resolve(.file(path: file), credential: "password", site: "wiki") == "file-secret")
        chmod(file, 0o644)
        let error = await #expect(throws: CredentialError.self) { try await resolver.resolve(.file(path: file), credential: "password", site: "wiki") }
        #expect(error?.description.contains("others can access it") == true)
        #expect(error?.description.contains("file-secret") == false)
        let missing = await #expect(throws: CredentialError.self) {
            try await resolver.resolve(.file(path: folder.path + "/none"), credential: "password", site: "wiki")
        }
        #expect(missing?.description.contains("No such file") == true)
    }

    @Test func commandsRunWithoutShellTrimOneNewlineAndSendStderrToTheLog() async throws {
        let lines = LineCollector()
        let resolver = CredentialResolver(secrets: nil, standardError: { site, credential, line in lines.add("\(site)/\(credential): \(line)") })
        let value = try await resolver.resolve(
            .command(["sh", "-c", "echo 'warming up' >&2; echo \"$0\" >&2; printf '%s\\n\\n' \"$0\"", "cmd-secret $HOME"]),
            credential: "password", site: "wiki")
        #expect(value == "cmd-secret $HOME\n")
        #expect(lines.all == ["wiki/password: warming up", "wiki/password: ***"])
        let literal = try await resolver.resolve(.command(["printf", "%s", "a;b|c"]), credential: "p", site: "s")
        #expect(literal == "a;b|c")
    }

    @Test func commandFailuresAndTimeoutsSayWhichCredential() async throws {
        // Only the slow command meets the short timeout: on a loaded machine even `sh -c "exit 3"` may need longer.
        let resolver = CredentialResolver(secrets: nil, commandTimeout: .seconds(20))
        let impatient = CredentialResolver(secrets: nil, commandTimeout: .milliseconds(300))
        let failed = await #expect(throws: CredentialError.self) { try await resolver.resolve(.command(["sh", "-c", "exit 3"]), credential: "password", site: "wiki") }
        #expect(failed?.description == "site 'wiki', credential 'password': command `sh` failed (exit status 3)")
        // Timed in a high-priority task: the test's own task may wait behind other tests' work.
        let (timedOut, elapsed) = await Task.detached(priority: .high) {
            let started = ContinuousClock.now
            let outcome: Result<String, CredentialError>
            do throws(CredentialError) {
                outcome = .success(try await impatient.resolve(.command(["sh", "-c", "sleep 20 & sleep 20"]), credential: "password", site: "wiki"))
            } catch {
                outcome = .failure(error)
            }
            return (outcome, ContinuousClock.now - started)
        }.value
        let slow = #expect(throws: CredentialError.self) { try timedOut.get() }
        #expect(slow?.description.contains("did not finish") == true)
        // Well before the command's own 20 s: under a sanitizer the caller's resumption is slower, not the kill.
        #expect(elapsed < min(.seconds(5) * sanitizerSlowdown, .seconds(15)))
        let absent = await #expect(throws: CredentialError.self) {
            try await resolver.resolve(.command(["/nonexistent/program"]), credential: "password", site: "wiki")
        }
        #expect(absent?.description.contains("cannot run /nonexistent/program") == true)
        let empty = await #expect(throws: CredentialError.self) { try await resolver.resolve(.command(["true"]), credential: "password", site: "wiki") }
        #expect(empty?.description.contains("printed nothing") == true)
    }

    /// A command that times out is killed before its value is known, so its standard error cannot be masked: a
    /// command that printed its secret there and then hung would put it in the log. It is dropped, and counted.
    @Test func aTimedOutCommandsStandardErrorIsDropped() async throws {
        let lines = LineCollector()
        // Long enough for the line to be written on a loaded machine; the command sleeps far longer.
        let impatient = CredentialResolver(secrets: nil, commandTimeout: .seconds(2), standardError: { lines.add("\($0)/\($1): \($2)") })
        let outcome: CredentialError?
        do throws(CredentialError) {
            _ = try await impatient.resolve(
                .command(["sh", "-c", "echo 'the secret is hunter2-0001' >&2; sleep 20 & sleep 20"]), credential: "password", site: "wiki")
            outcome = nil
        } catch {
            outcome = error
        }
        #expect(outcome?.description.contains("did not finish") == true)
        #expect(outcome?.description.contains("its standard error (1 line(s)) was dropped") == true, "\(outcome?.description ?? "-")")
        #expect(outcome?.description.contains("hunter2") == false)
        #expect(lines.all.isEmpty, "\(lines.all)")
    }

    @Test func totpFromAVaultSecret() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"), for: ItemReference(.credential, "wiki/totp"))
        try vault.set(bytes("not base32!"), for: ItemReference(.credential, "bad/totp"))
        let resolver = CredentialResolver(secrets: vault.background, clock: { Date(timeIntervalSince1970: 1_111_111_109) })
        let code = try await resolver.resolve(.totp(TOTPParameters(secretName: "wiki/totp", digits: 8)), credential: "otp", site: "wiki")
        #expect(code == "07081804")
        #expect(try await resolver.resolve(.totp(TOTPParameters(secretName: "wiki/totp")), credential: "otp", site: "wiki") == "081804")
        let bad = await #expect(throws: CredentialError.self) {
            try await resolver.resolve(.totp(TOTPParameters(secretName: "bad/totp")), credential: "otp", site: "wiki")
        }
        #expect(bad?.description.contains("not a base32 TOTP secret") == true)
        #expect(bad?.description.contains("not base32!") == false)
    }

    @Test func commandsRunConcurrently() async throws {
        let resolver = CredentialResolver(secrets: nil, commandTimeout: .seconds(60))
        let wiki = site([
            CredentialEntry(name: "slow", source: .command(["sh", "-c", "sleep 0.2; echo slow-value"])),
            CredentialEntry(name: "missing", source: .environment("NOT_SET_ANYWHERE_42")),
        ])
        async let first = resolver.value(of: "slow", in: wiki)
        async let second = resolver.value(of: "slow", in: wiki)
        #expect(try await [first, second] == ["slow-value", "slow-value"])
        await #expect(throws: CredentialError.self) { try await resolver.value(of: "missing", in: wiki) }
    }

    @Test func configuredVaultKeysMapToMasterKeySources() {
        #expect(MasterKeySource(.file(path: "/k")) == .keyFile(path: "/k"))
        #expect(MasterKeySource(.passphraseEnvironment("P")) == .passphraseEnvironment(name: "P"))
        #expect(MasterKeySource(.passphraseFile(path: "/p")) == .passphraseFile(path: "/p"))
        #expect(MasterKeySource(.passphraseCommand(["pass", "show"])) == .passphraseCommand(argv: ["pass", "show"], timeout: VaultKey.defaultCommandTimeout))
        #expect(MasterKeySource(.systemdCredential("sk")) == .systemdCredential(name: "sk"))
    }
}

/// Collects log lines from a `@Sendable` callback.
final class LineCollector: Sendable {
    private let lines = Locked<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// SPEC sections 3 and 5: credential and passphrase commands see PATH, HOME and LANG only, never the master
/// passphrase or anything else of the caller's environment. Values are compared, never printed.
@Suite struct ChildEnvironmentTests {
    static let secret = "master-passphrase-\(UUID().uuidString)"
    static let marker = "SK_TEST_MARKER_\(UInt32.random(in: 0...UInt32.max))"

    /// The test process's environment plus the vault passphrase and a marker variable.
    static var callerEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SK_TEST_PASSPHRASE"] = secret
        environment[marker] = "marker-value"
        environment["LANG"] = "C.UTF-8"
        environment["HOME"] = "/home/sk-test"
        return environment
    }

    static func names(in dump: String) -> [String] {
        dump.split(separator: "\n").map { String($0.prefix { $0 != "=" }) }.sorted()
    }

    @Test func aCredentialCommandGetsNeitherThePassphraseNorTheCallersVariables() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let environment = Self.callerEnvironment
        let vault = try Vault.open(
            stateDirectory: folder.state, key: .passphraseEnvironment(name: "SK_TEST_PASSPHRASE"), createIfMissing: true,
            scrypt: fastScrypt, environment: environment)
        defer { vault.close() }
        let resolver = CredentialResolver(secrets: vault.background, environment: environment)
        let dump = try await resolver.resolve(.command(["/usr/bin/env"]), credential: "password", site: "wiki")
        // Booleans only: a failing expectation shows its operands, and the dump must never be shown.
        let hasPassphrase = dump.contains(Self.secret), hasMarker = dump.contains(Self.marker)
        let hasPassphraseName = dump.contains("SK_TEST_PASSPHRASE")
        #expect(!hasPassphrase)
        #expect(!hasMarker)
        #expect(!hasPassphraseName)
        let lines = dump.split(separator: "\n")
        let keptHomeAndLang = lines.contains("HOME=/home/sk-test") && lines.contains("LANG=C.UTF-8")
        #expect(keptHomeAndLang)
        #expect(Self.names(in: dump) == ["HOME", "LANG", "PATH"])
    }

    @Test func aPassphraseCommandGetsOnlyTheMinimalEnvironment() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let dumpFile = folder.path + "/environment"
        // Another passphrase sits in the environment (the one `vault rekey` moves away from, say).
        let source = MasterKeySource.passphraseCommand(
            argv: ["sh", "-c", "/usr/bin/env > \"$0\"; echo from-the-command", dumpFile], timeout: .seconds(60))
        let state = folder.state
        let environment = Self.callerEnvironment
        try await onDedicatedThread { () throws(VaultError) in
            try Vault.open(stateDirectory: state, key: source, createIfMissing: true, scrypt: fastScrypt, environment: environment).close()
        }
        let dump = String(decoding: readFile(dumpFile), as: UTF8.self)
        let hasPassphrase = dump.contains(Self.secret), hasMarker = dump.contains(Self.marker)
        #expect(!hasPassphrase)
        #expect(!hasMarker)
        // PWD is the shell's own doing (dash exports it), not the parent's.
        #expect(Self.names(in: dump).filter { $0 != "PWD" } == ["HOME", "LANG", "PATH"])
    }
}
