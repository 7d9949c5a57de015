import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

@Suite struct VaultKeyTests {
    @Test func aKeyFileIsCreated0600OnFirstRunWith32Bytes() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        _ = try openWithKeyFile(folder)
        #expect(readFile(folder.keyFile).count == 32)
        #expect(mode(of: folder.keyFile) == 0o600)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o601])
    func aKeyFileOthersCanAccessIsRefused(permissions: Int) throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try openWithKeyFile(folder).close()
        chmod(folder.keyFile, mode_t(permissions))
        let error = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: false) }
        #expect(error?.description.contains(folder.keyFile) == true)
        #expect(error?.description.contains("chmod 600") == true)
        #expect(error?.description.contains("0\(String(permissions, radix: 8))") == true)
    }

    @Test(arguments: [0o400, 0o700])
    func ownerOnlyKeyFileModesAreAccepted(permissions: Int) throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try openWithKeyFile(folder).close()
        chmod(folder.keyFile, mode_t(permissions))
        let vault = try openWithKeyFile(folder, create: false)
        #expect(vault.keyGenerations == [1])
    }

    @Test(arguments: [0, 16, 31, 33, 64])
    func aKeyFileOfTheWrongSizeIsRefused(size: Int) throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        writeFile(folder.keyFile, [UInt8](repeating: 9, count: size))
        chmod(folder.keyFile, 0o600)
        let error = #expect(throws: VaultError.self) { try openWithKeyFile(folder) }
        #expect(error?.description.contains("holds \(size) bytes") == true)
    }

    @Test func aWrongKeyFileIsRefusedAsWrongKey() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("v"), for: ItemReference(.credential, "x"))
        vault.close()
        var key = readFile(folder.keyFile)
        key[0] ^= 1
        writeFile(folder.keyFile, key)
        let error = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: false) }
        #expect(error?.reason == .wrongKey(source: "key file \(folder.keyFile)"))
    }

    @Test func aMissingKeyFileForAnExistingVaultIsNotRecreated() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try openWithKeyFile(folder).close()
        try FileManager.default.removeItem(atPath: folder.keyFile)
        let error = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: true) }
        #expect(error?.description.contains("does not exist") == true)
        #expect(!FileManager.default.fileExists(atPath: folder.keyFile))
    }

    @Test func passphraseFromEnvironmentOpensAndAWrongOneIsRefused() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let source = MasterKeySource.passphraseEnvironment(name: "VAULT_TEST_PASS")
        let vault = try Vault.open(
            stateDirectory: folder.state, key: source, createIfMissing: true, scrypt: fastScrypt,
            environment: ["VAULT_TEST_PASS": "open sesame"])
        try vault.set(bytes("v1"), for: ItemReference(.credential, "x"))
        vault.close()
        let keyring = String(decoding: readFile(folder.state + "/vault/keyring"), as: UTF8.self)
        #expect(!keyring.contains("open sesame"))
        #expect(keyring.contains("\"log2N\" : 10"))
        let reopened = try Vault.open(stateDirectory: folder.state, key: source, environment: ["VAULT_TEST_PASS": "open sesame"])
        #expect(try reopened.value(of: ItemReference(.credential, "x")) == bytes("v1"))
        reopened.close()
        let error = #expect(throws: VaultError.self) {
            try Vault.open(stateDirectory: folder.state, key: source, environment: ["VAULT_TEST_PASS": "open sesame!"])
        }
        #expect(error?.reason == .wrongKey(source: "the passphrase in $VAULT_TEST_PASS"))
        #expect(error?.description.contains("sesame") == false)
        let unset = #expect(throws: VaultError.self) { try Vault.open(stateDirectory: folder.state, key: source, environment: [:]) }
        #expect(unset?.description.contains("VAULT_TEST_PASS") == true)
    }

    @Test func defaultScryptParametersRoundTrip() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let source = MasterKeySource.passphrase(VaultPassphrase(bytes("default cost")))
        try Vault.initialize(stateDirectory: folder.state, key: source).close()
        #expect(String(decoding: readFile(folder.state + "/vault/keyring"), as: UTF8.self).contains("\"log2N\" : 15"))
        _ = try Vault.open(stateDirectory: folder.state, key: source)
    }

    @Test func passphraseFileMustBePrivate() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let file = try folder.write("file passphrase\n", to: "pass.txt", mode: 0o600)
        let source = MasterKeySource.passphraseFile(path: file)
        try Vault.open(stateDirectory: folder.state, key: source, createIfMissing: true, scrypt: fastScrypt).close()
        // The trailing newline is not part of the passphrase.
        _ = try Vault.open(stateDirectory: folder.state, key: .passphrase(VaultPassphrase(bytes("file passphrase")))).close()
        chmod(file, 0o644)
        let error = #expect(throws: VaultError.self) { try Vault.open(stateDirectory: folder.state, key: source) }
        #expect(error?.description.contains("group or others") == true)
    }

    /// Opening the vault is synchronous and blocks its thread while the command runs, so it runs on a
    /// thread of its own here, as it does in the CLI at start-up.
    @Test func passphraseCommandRunsWithoutShellAndTimesOut() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let state = folder.state
        let source = MasterKeySource.passphraseCommand(argv: ["printf", "%s\\n", "from a command; not $HOME"], timeout: .seconds(60))
        try await onDedicatedThread { () throws(VaultError) in
            try Vault.open(stateDirectory: state, key: source, createIfMissing: true, scrypt: fastScrypt).close()
        }
        _ = try Vault.open(stateDirectory: state, key: .passphrase(VaultPassphrase(bytes("from a command; not $HOME")))).close()
        // Killed at its 300 ms timeout: far sooner than the minute it would sleep, even on a loaded machine
        // (starting and killing a process took over 5 s there under the parallel suite).
        let slow = MasterKeySource.passphraseCommand(argv: ["sleep", "60"], timeout: .milliseconds(300))
        let (timedOut, elapsed) = await onDedicatedThread {
            let started = ContinuousClock.now
            let outcome = Result { () throws(VaultError) in try Vault.open(stateDirectory: state, key: slow) }
            return (outcome.map { $0.close() }, ContinuousClock.now - started)
        }
        let error = #expect(throws: VaultError.self) { try timedOut.get() }
        #expect(error?.description.contains("did not finish") == true)
        #expect(elapsed < .seconds(30))
        let failing = MasterKeySource.passphraseCommand(argv: ["false"], timeout: .seconds(60))
        let failed = await onDedicatedThread { Result { () throws(VaultError) in try Vault.open(stateDirectory: state, key: failing) }.map { $0.close() } }
        let failure = #expect(throws: VaultError.self) { try failed.get() }
        #expect(failure?.description.contains("exit status 1") == true)
    }

    @Test func systemdCredentialAsKeyOrPassphrase() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let credentials = folder.path + "/creds"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        writeFile(credentials + "/sk.key", [UInt8](repeating: 0x42, count: 32))
        chmod(credentials + "/sk.key", 0o400)
        let environment = ["CREDENTIALS_DIRECTORY": credentials]
        let source = MasterKeySource.systemdCredential(name: "sk.key")
        let vault = try Vault.open(stateDirectory: folder.state, key: source, createIfMissing: true, environment: environment)
        try vault.set(bytes("v"), for: ItemReference(.credential, "x"))
        vault.close()
        #expect(String(decoding: readFile(folder.state + "/vault/keyring"), as: UTF8.self).contains("\"method\" : \"key\""))
        _ = try Vault.open(stateDirectory: folder.state, key: source, environment: environment).close()
        let missing = #expect(throws: VaultError.self) { try Vault.open(stateDirectory: folder.state, key: source, environment: [:]) }
        #expect(missing?.description.contains("CREDENTIALS_DIRECTORY") == true)

        let other = try TemporaryFolder()
        defer { other.cleanUp() }
        writeFile(credentials + "/pass", bytes("a systemd passphrase\n"))
        chmod(credentials + "/pass", 0o400)
        try Vault.open(stateDirectory: other.state, key: .systemdCredential(name: "pass"), createIfMissing: true,
                       scrypt: fastScrypt, environment: environment).close()
        #expect(String(decoding: readFile(other.state + "/vault/keyring"), as: UTF8.self).contains("\"method\" : \"passphrase\""))
    }

    @Test func initRefusesAnExistingVaultAndOpenRefusesAMissingOne() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let missing = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: false) }
        #expect(missing?.reason == .notInitialized)
        try Vault.initialize(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile)).close()
        let again = #expect(throws: VaultError.self) { try Vault.initialize(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile)) }
        #expect(again?.reason == .alreadyInitialized)
    }

    @Test func aLostKeyringWithItemsLeftIsNotSilentlyReplaced() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("v"), for: ItemReference(.credential, "x"))
        vault.close()
        try FileManager.default.removeItem(atPath: folder.state + "/vault/keyring")
        let error = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: true) }
        #expect(error?.reason == .orphanedItems(count: 1))
    }

    @Test func aDamagedKeyringIsReported() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try openWithKeyFile(folder).close()
        let keyringPath = folder.state + "/vault/keyring"
        let original = String(decoding: readFile(keyringPath), as: UTF8.self)
        writeFile(keyringPath, bytes("{not json"))
        let garbage = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: false) }
        #expect(garbage?.description.contains("the keyring file was modified or damaged") == true)
        writeFile(keyringPath, bytes(original.replacingOccurrences(of: "\"format\" : 1", with: "\"format\" : 2")))
        let newer = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: false) }
        #expect(newer?.description.contains("format version 2") == true)
    }

    @Test func rekeyChangesThePassphraseWithoutTouchingItems() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let old = MasterKeySource.passphrase(VaultPassphrase(bytes("old pass")))
        let new = MasterKeySource.passphrase(VaultPassphrase(bytes("new pass")))
        let vault = try Vault.open(stateDirectory: folder.state, key: old, createIfMissing: true, scrypt: fastScrypt)
        for index in 0..<5 { try vault.set(bytes("value \(index)"), for: ItemReference(.credential, "c\(index)")) }
        let before = itemFiles(vault).map { ($0, readFile($0)) }
        try vault.rekey(to: new, scrypt: fastScrypt)
        #expect(try vault.value(of: ItemReference(.credential, "c3")) == bytes("value 3"))
        vault.close()
        let after = itemFiles(vault).map { ($0, readFile($0)) }
        #expect(before.map(\.0) == after.map(\.0))
        #expect(before.map(\.1) == after.map(\.1))
        let refused = #expect(throws: VaultError.self) { try Vault.open(stateDirectory: folder.state, key: old) }
        #expect(refused?.reason == .wrongKey(source: "the passphrase given"))
        let reopened = try Vault.open(stateDirectory: folder.state, key: new)
        #expect(try reopened.value(of: ItemReference(.credential, "c0")) == bytes("value 0"))
        // From a passphrase to a new key file, which must exist first.
        let keyFile = folder.path + "/new.key"
        try VaultKey.createKeyFile(at: keyFile)
        #expect(throws: VaultError.self) { try VaultKey.createKeyFile(at: keyFile) }
        try reopened.rekey(to: .keyFile(path: keyFile))
        reopened.close()
        let byKeyFile = try Vault.open(stateDirectory: folder.state, key: .keyFile(path: keyFile))
        #expect(try byKeyFile.value(of: ItemReference(.credential, "c4")) == bytes("value 4"))
    }
}
