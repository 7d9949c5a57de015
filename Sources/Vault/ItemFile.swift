import Crypto
import Foundation
import Platform

/// The bytes of one item file, format version 1:
///
/// ```
/// magic "SKVI" | version (1 byte) | key id (UInt32, big endian) | nonce (12) | ciphertext | tag (16)
/// plaintext = kind (1 byte) | name length (UInt16, big endian) | name (UTF-8) | value
/// associated data = the 9 header bytes | the file id (32 bytes, the keyed hash that names the file)
/// ```
///
/// Format version 2, for the fleet's database (SPEC section 11), adds a write counter to the header, after the
/// key id: `counter (UInt64, big endian)`, 17 header bytes, authenticated with the rest of the header. Each write
/// of an item takes a counter above every one seen for it, so a reader that has seen a counter refuses a row
/// with a lower one: an older row put back by whoever holds the database (a rollback) no longer opens as current.
///
/// The file id is HMAC-SHA256(name key, kind | name), so binding the ciphertext to the file id binds it
/// to the kind and name: a file renamed over another item's name fails authentication. After
/// decryption the kind and name inside are hashed again and compared with the file id.
enum ItemFile {
    static let magic: [UInt8] = Array("SKVI".utf8)
    static let formatVersion: UInt8 = 1
    /// The format with a write counter (``seal(kind:name:value:keys:fileID:counter:)`` with a counter).
    static let countedFormatVersion: UInt8 = 2
    static let headerSize = 9
    static let countedHeaderSize = 17
    static let nonceSize = 12
    static let tagSize = 16
    /// Header, nonce, tag and the smallest plaintext (kind, name length, a one-byte name).
    static let minimumSize = headerSize + nonceSize + tagSize + 4
    static let maximumNameLength = 255

    /// The header size of format `version`.
    static func headerLength(of version: UInt8) -> Int {
        version == countedFormatVersion ? countedHeaderSize : headerSize
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8.count
        guard bytes >= 1, bytes <= maximumNameLength else { return false }
        return !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    static func header(keyID: UInt32, counter: UInt64? = nil) -> [UInt8] {
        let key = withUnsafeBytes(of: keyID.bigEndian) { Array($0) }
        guard let counter else { return magic + [formatVersion] + key }
        return magic + [countedFormatVersion] + key + withUnsafeBytes(of: counter.bigEndian) { Array($0) }
    }

    /// The write counter in a header of format 2, unauthenticated (for choosing the next one); nil for format 1
    /// or bytes that are not an item.
    static func counter(of bytes: [UInt8]) -> UInt64? {
        guard bytes.count >= countedHeaderSize, Array(bytes[0..<4]) == magic, bytes[4] == countedFormatVersion else { return nil }
        return bytes[9..<17].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    static func plaintext(kind: ItemKind, name: String, value: [UInt8]) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        let length = UInt16(nameBytes.count)
        return [kind.rawValue, UInt8(length >> 8), UInt8(length & 0xff)] + nameBytes + value
    }

    /// - Parameter counter: nil for format 1; a write counter for format 2.
    static func seal(
        kind: ItemKind, name: String, value: [UInt8], keys: KeyGeneration, fileID: [UInt8], counter: UInt64? = nil
    ) throws -> [UInt8] {
        let header = header(keyID: keys.id, counter: counter)
        let box = try AES.GCM.seal(
            plaintext(kind: kind, name: name, value: value), using: keys.itemKey.symmetricKey, authenticating: header + fileID)
        return header + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
    }

    /// The key id in a file's header, after checking magic, version and size.
    static func keyID(of bytes: [UInt8]) -> Result<UInt32, VaultError.Reason> {
        if bytes.count < 5 {
            // A prefix of a real item's header is a truncated item; anything else is a foreign file.
            let expected = magic + [formatVersion]
            return .failure(Array(expected.prefix(bytes.count)) == bytes ? .truncated(size: bytes.count) : .foreignFile)
        }
        if Array(bytes[0..<4]) != magic { return .failure(.foreignFile) }
        if bytes[4] != formatVersion && bytes[4] != countedFormatVersion { return .failure(.unknownFormatVersion(bytes[4])) }
        if bytes.count < minimumSize - headerSize + headerLength(of: bytes[4]) { return .failure(.truncated(size: bytes.count)) }
        let id = bytes[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return .success(id)
    }

    struct Opened {
        var kind: ItemKind
        var name: String
        var value: [UInt8]
        /// The write counter of format 2 (authenticated); 0 for format 1.
        var counter: UInt64
    }

    /// Decrypts an item's bytes stored under `id` with whichever of `generations` its header names.
    static func open(_ bytes: [UInt8], id: [UInt8], generations: [KeyGeneration]) -> Result<Opened, VaultError.Reason> {
        let keyID: UInt32
        switch self.keyID(of: bytes) {
        case let .success(value): keyID = value
        case let .failure(reason): return .failure(reason)
        }
        guard let generation = generations.first(where: { $0.id == keyID }) else { return .failure(.unknownKeyID(keyID)) }
        guard id.count == 32 else { return .failure(.foreignFile) }
        return open(bytes, keys: generation, fileID: id)
    }

    /// Decrypts a file's bytes whose header was checked by ``keyID(of:)``.
    static func open(_ bytes: [UInt8], keys: KeyGeneration, fileID: [UInt8]) -> Result<Opened, VaultError.Reason> {
        let size = headerLength(of: bytes[4])
        let header = Array(bytes[0..<size])
        let nonceEnd = size + nonceSize
        let tagStart = bytes.count - tagSize
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: bytes[size..<nonceEnd]),
                ciphertext: bytes[nonceEnd..<tagStart], tag: bytes[tagStart...])
            plaintext = try AES.GCM.open(box, using: keys.itemKey.symmetricKey, authenticating: header + fileID)
        } catch {
            return .failure(.tampered)
        }
        let body = Array(plaintext)
        guard body.count >= 3, let kind = ItemKind(rawValue: body[0]) else { return .failure(.tampered) }
        let length = Int(body[1]) << 8 | Int(body[2])
        guard body.count >= 3 + length, let name = String(validating: body[3..<(3 + length)], as: UTF8.self) else {
            return .failure(.tampered)
        }
        guard keys.fileID(kind: kind, name: name) == fileID else { return .failure(.tampered) }
        return .success(Opened(kind: kind, name: name, value: Array(body[(3 + length)...]), counter: counter(of: header) ?? 0))
    }
}

/// One generation of the master key and the subkeys derived from it (HKDF-SHA256, RFC 5869), each kept in
/// pages of its own that core files leave out (``ProtectedKey``).
struct KeyGeneration: Sendable {
    let id: UInt32
    let masterKey: ProtectedKey
    /// Encrypts items (AES-256-GCM).
    let itemKey: ProtectedKey
    /// Names item files (HMAC-SHA256 of kind and name).
    let nameKey: ProtectedKey

    init(id: UInt32, masterKey: SymmetricKey) throws(VaultError) {
        self.id = id
        self.masterKey = try ProtectedKey(masterKey)
        itemKey = try ProtectedKey(HKDF<SHA256>.deriveKey(
            inputKeyMaterial: masterKey, info: Array("sessionkeeper vault v1 item encryption".utf8), outputByteCount: 32))
        nameKey = try ProtectedKey(HKDF<SHA256>.deriveKey(
            inputKeyMaterial: masterKey, info: Array("sessionkeeper vault v1 item names".utf8), outputByteCount: 32))
    }

    func fileID(kind: ItemKind, name: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: [kind.rawValue] + Array(name.utf8), using: nameKey.symmetricKey))
    }
}

/// A key the vault keeps for as long as it is open, in ``Platform/SecretBytes``: pages of their own, left out of
/// core files, locked in memory when allowed, zeroed when released. swift-crypto takes a `SymmetricKey`, so each
/// use makes a short-lived copy on the heap (``symmetricKey``), which swift-crypto zeroes when it is freed.
struct ProtectedKey: Sendable {
    private let bytes: SecretBytes

    init(_ key: SymmetricKey) throws(VaultError) {
        do throws(SystemError) {
            bytes = try SecretBytes(count: key.bitCount / 8) { target in key.withUnsafeBytes { target.copyMemory(from: $0) } }
        } catch {
            throw VaultError(.io(error))
        }
    }

    /// A copy for one use by swift-crypto.
    var symmetricKey: SymmetricKey { bytes.withUnsafeBytes { SymmetricKey(data: $0) } }

    func withUnsafeBytes<Result, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Result) throws(Failure) -> Result {
        try bytes.withUnsafeBytes(body)
    }
}

extension Array where Element == UInt8 {
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    init?(hexString text: String) {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(chars.count / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self = bytes
    }
}
