import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

/// Vaults written before the keyring was read through the JSON module still open. The fixtures were made
/// by that earlier `sessionkeeper` (`vault init`, then `secret set wiki/password`; the passphrase one also
/// `vault rotate`, so its keyring holds generation 2 and a salt with JSON-escaped slashes).
@Suite struct KeyringFormatTests {
    /// Copies Fixtures/NAME into a fresh state folder (git keeps no 0600 modes: they are set here).
    static func stateFolder(from name: String, _ folder: TemporaryFolder) throws -> String {
        let source = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures")).path
        try FileManager.default.copyItem(atPath: source, toPath: folder.state)
        for case let relative as String in FileManager.default.enumerator(atPath: folder.state) ?? .init() {
            var isDirectory: ObjCBool = false
            let path = folder.state + "/" + relative
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? 0o700 : 0o600], ofItemAtPath: path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.state)
        return folder.state
    }

    @Test func aKeyFileVaultOfTheEarlierFormatOpensAndReads() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let state = try Self.stateFolder(from: "vault-v1-keyfile", folder)
        let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: state + "/master.key"))
        defer { vault.close() }
        #expect(try vault.value(of: ItemReference(.credential, "wiki/password")) == Array("fixture-secret-value".utf8))
        #expect(vault.keyGenerations == [1])
    }

    @Test func aPassphraseVaultOfTheEarlierFormatOpensAndReads() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let state = try Self.stateFolder(from: "vault-v1-passphrase", folder)
        let vault = try Vault.open(stateDirectory: state, key: .passphrase(VaultPassphrase(bytes("fixture passphrase"))))
        defer { vault.close() }
        #expect(try vault.value(of: ItemReference(.credential, "wiki/password")) == Array("fixture-secret-value".utf8))
        #expect(vault.keyGenerations == [2])
    }

    @Test func aKeyringWrittenNowReadsBackAndKeepsItsLayout() throws {
        let fixture = try #require(Bundle.module.url(forResource: "vault-v1-passphrase/vault/keyring", withExtension: nil, subdirectory: "Fixtures"))
        let bytes = Array(try Data(contentsOf: fixture))
        let keyring = try Keyring.decode(bytes)
        #expect(keyring.unlock.scrypt == ScryptParameters(log2N: 15, r: 8, p: 1))
        #expect(keyring.unlock.salt.contains("/"))
        #expect(keyring.encoded() == bytes)
    }

    @Test(arguments: [
        ("{\"magic\": \"sessionkeeper-vault-keyring\"", "invalid JSON"),
        ("{\"magic\": \"sessionkeeper-vault-keyring\", \"format\": 1, \"keys\": [], \"current\": 1}", "/unlock is missing (line 1)"),
        ("{\"magic\": \"sessionkeeper-vault-keyring\", \"format\": \"1\", \"unlock\": {}, \"keys\": [], \"current\": 1}",
         "/format must be a whole number, found a string (line 1)"),
        ("{\"magic\": \"other\", \"format\": 1, \"unlock\": {\"method\": \"key\", \"salt\": \"\"}, \"keys\": [], \"current\": 1}",
         "not a SessionKeeper keyring"),
    ])
    func aDamagedKeyringSaysWhatIsWrong(text: String, message: String) {
        let error = #expect(throws: VaultError.self) { try Keyring.decode(Array(text.utf8)) }
        #expect(error?.description.contains(message) == true, "\(error?.description ?? "")")
    }
}
