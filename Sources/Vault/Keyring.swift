import Crypto
import CryptoExtras
import Foundation
import JSON

/// scrypt's cost parameters (RFC 7914). The defaults, N = 2^15, r = 8, p = 1, take 32 MiB and about
/// 0.1 s: the interactive-login setting of the scrypt paper, acceptable once per daemon start.
public struct ScryptParameters: Sendable, Hashable, Codable {
    public var log2N: Int
    public var r: Int
    public var p: Int

    public init(log2N: Int = 15, r: Int = 8, p: Int = 1) {
        self.log2N = log2N
        self.r = r
        self.p = p
    }

    /// Bounds that keep a damaged or hostile keyring from asking for absurd memory or time.
    var isReasonable: Bool { (1...22).contains(log2N) && (1...32).contains(r) && (1...16).contains(p) }
}

/// The keyring file, `vault/keyring`: the master key generations sealed (AES-256-GCM) under a key
/// encryption key that comes from the key file, the passphrase (through scrypt) or the systemd
/// credential. `rekey` re-seals these few bytes; items never change. During `rotate` it holds two
/// generations; `current` is the one new writes use.
struct Keyring: Codable {
    static let magic = "sessionkeeper-vault-keyring"
    static let formatVersion = 1

    struct Unlock: Codable {
        /// "key" (32 raw bytes through HKDF) or "passphrase" (through scrypt).
        var method: String
        var salt: String
        var scrypt: ScryptParameters?
    }

    struct SealedKey: Codable {
        var id: UInt32
        var sealed: String
    }

    var magic: String
    var format: Int
    var unlock: Unlock
    var keys: [SealedKey]
    var current: UInt32

    static func decode(_ bytes: [UInt8]) throws(VaultError) -> Keyring {
        let keyring: Keyring
        do {
            keyring = try JSONValueDecoder().decode(Keyring.self, from: bytes)
        } catch {
            throw VaultError(.keyringDamaged("not a keyring (\(error))"))
        }
        guard keyring.magic == magic else { throw VaultError(.keyringDamaged("not a SessionKeeper keyring")) }
        guard keyring.format == formatVersion else {
            throw VaultError(.keyringDamaged("format version \(keyring.format) is not \(formatVersion), the one this SessionKeeper reads"))
        }
        guard keyring.keys.contains(where: { $0.id == keyring.current }) else {
            throw VaultError(.keyringDamaged("the current key generation \(keyring.current) is missing"))
        }
        return keyring
    }

    /// The file's bytes: Foundation's pretty-printed, key-sorted JSON, the layout every keyring has had.
    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // Encoding plain strings and integers cannot fail.
        return Array((try? encoder.encode(self)) ?? Data()) + [UInt8(ascii: "\n")]
    }

    /// The key encryption key for `material` under this keyring's unlock method.
    static func keyEncryptionKey(_ unlock: Unlock, material: KeyMaterial, source: MasterKeySource) throws(VaultError) -> ProtectedKey {
        try ProtectedKey(derivedKeyEncryptionKey(unlock, material: material, source: source))
    }

    private static func derivedKeyEncryptionKey(_ unlock: Unlock, material: KeyMaterial, source: MasterKeySource) throws(VaultError) -> SymmetricKey {
        guard let salt = Data(base64Encoded: unlock.salt) else { throw VaultError(.keyringDamaged("bad salt")) }
        switch unlock.method {
        case "key":
            guard material.kind != .passphrase, material.bytes.count == VaultKey.keyFileSize else {
                throw VaultError(.keySource("the vault was created with a 32-byte key file or credential, but the configured key is \(source)"))
            }
            return HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: material.bytes), salt: salt,
                info: Array("sessionkeeper vault v1 key encryption".utf8), outputByteCount: 32)
        case "passphrase":
            guard material.kind != .key else {
                throw VaultError(.keySource("the vault was created with a passphrase, but the configured key is \(source)"))
            }
            guard let parameters = unlock.scrypt, parameters.isReasonable else {
                throw VaultError(.keyringDamaged("missing or unreasonable scrypt parameters"))
            }
            do {
                return try KDF.Scrypt.deriveKey(
                    from: material.bytes, salt: salt, outputByteCount: 32,
                    rounds: 1 << parameters.log2N, blockSize: parameters.r, parallelism: parameters.p)
            } catch {
                throw VaultError(.keySource("scrypt failed: \(error)"))
            }
        default:
            throw VaultError(.keyringDamaged("unknown unlock method '\(unlock.method)'"))
        }
    }

    /// A keyring, its generations and its key encryption key, as one process holds them once it is open.
    struct Opened {
        var keyring: Keyring
        /// Newest first.
        var generations: [KeyGeneration]
        var keyEncryptionKey: ProtectedKey
    }

    /// A new keyring holding one random master key generation, sealed under a key from `material`.
    static func create(material: KeyMaterial, source: MasterKeySource, scrypt: ScryptParameters) throws(VaultError) -> Opened {
        let unlock = newUnlock(for: material, scrypt: scrypt)
        let kek = try keyEncryptionKey(unlock, material: material, source: source)
        let generation = try KeyGeneration(id: 1, masterKey: SymmetricKey(size: .bits256))
        let keyring = Keyring(
            magic: magic, format: formatVersion, unlock: unlock, keys: [try seal(generation, with: kek)], current: generation.id)
        return Opened(keyring: keyring, generations: [generation], keyEncryptionKey: kek)
    }

    /// Opens a keyring's bytes with `key` (its material obtained here unless given); errors name `origin`
    /// (the keyring file, or the database row that holds it).
    static func open(
        _ bytes: [UInt8], key: MasterKeySource, material: KeyMaterial?, environment: [String: String], origin: String
    ) throws(VaultError) -> Opened {
        var keyring: Keyring
        do { keyring = try decode(bytes) } catch { throw VaultError(error.reason, file: origin) }
        let keyMaterial: KeyMaterial
        if let material { keyMaterial = material } else { keyMaterial = try VaultKey.material(from: key, environment: environment) }
        let kek = try keyEncryptionKey(keyring.unlock, material: keyMaterial, source: key)
        let generations: [KeyGeneration]
        do { generations = try keyring.unseal(with: kek, source: key) } catch { throw VaultError(error.reason, file: origin) }
        keyring.keys.sort { $0.id < $1.id }
        return Opened(keyring: keyring, generations: generations, keyEncryptionKey: kek)
    }

    /// A fresh unlock description (new salt) for `material`.
    static func newUnlock(for material: KeyMaterial, scrypt: ScryptParameters) -> Unlock {
        let salt = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
        switch material.kind {
        case .key, .either: return Unlock(method: "key", salt: salt, scrypt: nil)
        case .passphrase: return Unlock(method: "passphrase", salt: salt, scrypt: scrypt)
        }
    }

    static func associatedData(id: UInt32) -> [UInt8] { Array("sessionkeeper vault v1 master key \(id)".utf8) }

    static func seal(_ generation: KeyGeneration, with kek: ProtectedKey) throws(VaultError) -> SealedKey {
        do {
            // Sealed straight from the protected pages: no copy of the master key on the heap.
            let box = try generation.masterKey.withUnsafeBytes { bytes in
                try AES.GCM.seal(bytes, using: kek.symmetricKey, authenticating: associatedData(id: generation.id))
            }
            return SealedKey(id: generation.id, sealed: box.combined!.base64EncodedString())
        } catch {
            throw VaultError(.keySource("sealing the master key failed: \(error)"))
        }
    }

    /// Opens every generation; a failure means the key is wrong (or the keyring was altered).
    func unseal(with kek: ProtectedKey, source: MasterKeySource) throws(VaultError) -> [KeyGeneration] {
        let kek = kek.symmetricKey
        var generations: [KeyGeneration] = []
        for sealedKey in keys {
            guard let combined = Data(base64Encoded: sealedKey.sealed) else {
                throw VaultError(.keyringDamaged("key generation \(sealedKey.id) is not base64"))
            }
            do {
                let box = try AES.GCM.SealedBox(combined: combined)
                var bytes = try AES.GCM.open(box, using: kek, authenticating: Keyring.associatedData(id: sealedKey.id))
                // The opened key is on the heap: zeroed once copied into protected pages.
                defer { bytes.resetBytes(in: bytes.startIndex..<bytes.endIndex) }
                guard bytes.count == 32 else { throw VaultError(.keyringDamaged("key generation \(sealedKey.id) has the wrong size")) }
                generations.append(try KeyGeneration(id: sealedKey.id, masterKey: SymmetricKey(data: bytes)))
            } catch let error as VaultError {
                throw error
            } catch {
                throw VaultError(.wrongKey(source: source.description))
            }
        }
        return generations.sorted { $0.id > $1.id }
    }
}
