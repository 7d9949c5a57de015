import Crypto
import CryptoExtras
import Foundation

/// How Chromium encrypts cookie values on Linux (`components/os_crypt`):
///
/// - the value is prefixed with its version: `v10` (the key derived from the fixed password `peanuts`, when
///   no keyring is used) or `v11` (the key derived from a random password Chromium keeps in the desktop
///   keyring);
/// - the key is PBKDF2-HMAC-SHA1 of that password with the salt `saltysalt`, 1 iteration, 16 bytes;
/// - the cipher is AES-128-CBC with PKCS#7 padding and an IV of 16 spaces;
/// - from database version 24 on, the plaintext starts with the SHA-256 digest of the cookie's `host_key`.
struct ChromiumCipher: Sendable {
    static let salt = Array("saltysalt".utf8)
    static let iterations = 1
    static let keyByteCount = 16
    static let initializationVector = [UInt8](repeating: 0x20, count: 16)
    /// The password of `v10` values.
    static let fixedPassword = Array("peanuts".utf8)
    static let digestByteCount = SHA256.byteCount

    enum Version: String, Sendable {
        case v10, v11
    }

    /// The key for `v10` values.
    let fixedKey: SymmetricKey
    /// The key for `v11` values, when the keyring gave its password.
    var keyringKey: SymmetricKey?

    init(keyringPassword: [UInt8]? = nil) throws {
        fixedKey = try Self.key(password: Self.fixedPassword)
        keyringKey = try keyringPassword.map(Self.key(password:))
    }

    static func key(password: [UInt8]) throws -> SymmetricKey {
        try KDF.Insecure.PBKDF2.deriveKey(
            from: password, salt: salt, using: .insecureSHA1, outputByteCount: keyByteCount,
            unsafeUncheckedRounds: iterations)
    }

    /// The version an encrypted value carries; nil for a prefix this reader does not know.
    static func version(of encrypted: [UInt8]) -> Version? {
        guard encrypted.count >= 3 else { return nil }
        return Version(rawValue: String(decoding: encrypted.prefix(3), as: UTF8.self))
    }

    /// Why a value could not be decrypted, in words naming no part of it.
    enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case unknownVersion
        case noKeyringKey
        case undecryptable
        case hostDigestMismatch
        case notText

        var description: String {
            switch self {
            case .unknownVersion: "its value is encrypted in a way this reader does not know (neither v10 nor v11)"
            case .noKeyringKey: "its value needs the keyring's key (v11)"
            case .undecryptable: "its value does not decrypt with the profile's key (a damaged value, or another key)"
            case .hostDigestMismatch: "its decrypted value does not start with its host's digest (another key, or a value moved from another host)"
            case .notText: "its decrypted value is not UTF-8 text"
            }
        }
    }

    /// The plaintext of `encrypted`, a value stored for `hostKey`.
    func decrypt(_ encrypted: [UInt8], hostKey: String, carriesHostDigest: Bool) -> Result<String, Failure> {
        let key: SymmetricKey
        switch Self.version(of: encrypted) {
        case .v10?: key = fixedKey
        case .v11?:
            guard let keyringKey else { return .failure(.noKeyringKey) }
            key = keyringKey
        case nil: return .failure(.unknownVersion)
        }
        var plaintext: [UInt8]
        do {
            let iv = try AES._CBC.IV(ivBytes: Self.initializationVector)
            plaintext = [UInt8](try AES._CBC.decrypt(encrypted.dropFirst(3), using: key, iv: iv))
        } catch {
            return .failure(.undecryptable)
        }
        if carriesHostDigest {
            let digest = [UInt8](SHA256.hash(data: Array(hostKey.utf8)))
            guard plaintext.count >= Self.digestByteCount, plaintext.prefix(Self.digestByteCount).elementsEqual(digest) else {
                return .failure(.hostDigestMismatch)
            }
            plaintext.removeFirst(Self.digestByteCount)
        }
        guard let text = String(validating: plaintext, as: UTF8.self) else { return .failure(.notText) }
        return .success(text)
    }
}
