import Crypto
import Foundation
import Platform

/// A vault's keys once unlocked: the master key generations of a keyring and what derives from them, the
/// sealing of items and their keyed-hash ids. It holds no storage: the vault folder keeps the keyring and
/// the sealed items in files (``Vault``), a database keeps the same bytes in rows (the PostgresStore module),
/// and both seal and open items through this type, so an item is the same bytes wherever it lives
/// (docs/VAULT.md, "Item files").
///
/// Immutable: a keyring change (rekey) gives a new value. Never prints a key.
public struct VaultKeys: Sendable, CustomStringConvertible {
    /// The keyring's bytes, exactly as stored.
    public let keyringBytes: [UInt8]
    let keyring: Keyring
    /// Newest first.
    let generations: [KeyGeneration]
    let current: KeyGeneration
    let keyEncryptionKey: ProtectedKey
    /// Where the key that opened the keyring came from.
    public let source: MasterKeySource

    init(keyringBytes: [UInt8], opened: Keyring.Opened, source: MasterKeySource, origin: String) throws(VaultError) {
        guard let current = opened.generations.first(where: { $0.id == opened.keyring.current }) else {
            throw VaultError(.keyringDamaged("the current key generation \(opened.keyring.current) is missing"), file: origin)
        }
        self.keyringBytes = keyringBytes
        keyring = opened.keyring
        generations = opened.generations.sorted { $0.id > $1.id }
        self.current = current
        keyEncryptionKey = opened.keyEncryptionKey
        self.source = source
    }

    public var description: String { "vault keys (generations \(keyGenerations.map(String.init).joined(separator: ", ")))" }

    /// A new keyring with one random master key generation, sealed under `key`. Blocks while the key is
    /// obtained (a passphrase command) and derived (scrypt): async callers use
    /// ``creating(key:scrypt:environment:)``.
    public static func create(
        key: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> VaultKeys {
        let material = try VaultKey.material(from: key, environment: environment)
        let opened = try Keyring.create(material: material, source: key, scrypt: scrypt)
        return try VaultKeys(keyringBytes: opened.keyring.encoded(), opened: opened, source: key, origin: "the new keyring")
    }

    /// Opens a keyring's bytes with `key`; errors name `origin` (where the bytes were read). Blocks like
    /// ``create(key:scrypt:environment:)``: async callers use ``unlocking(_:key:environment:origin:)``.
    public static func unlock(
        _ keyringBytes: [UInt8], key: MasterKeySource,
        environment: [String: String] = ProcessInfo.processInfo.environment, origin: String
    ) throws(VaultError) -> VaultKeys {
        let opened = try Keyring.open(keyringBytes, key: key, material: nil, environment: environment, origin: origin)
        return try VaultKeys(keyringBytes: keyringBytes, opened: opened, source: key, origin: origin)
    }

    /// ``create(key:scrypt:environment:)`` on the vault's I/O threads, never on Swift's cooperative pool.
    public static func creating(
        key: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(VaultError) -> VaultKeys {
        try await IOThreads.vault.run { () throws(VaultError) -> VaultKeys in
            try create(key: key, scrypt: scrypt, environment: environment)
        }
    }

    /// ``unlock(_:key:environment:origin:)`` on the vault's I/O threads, never on Swift's cooperative pool.
    public static func unlocking(
        _ keyringBytes: [UInt8], key: MasterKeySource,
        environment: [String: String] = ProcessInfo.processInfo.environment, origin: String
    ) async throws(VaultError) -> VaultKeys {
        try await IOThreads.vault.run { () throws(VaultError) -> VaultKeys in
            try unlock(keyringBytes, key: key, environment: environment, origin: origin)
        }
    }

    /// ``rekeyed(to:scrypt:environment:)`` of `keys` on the vault's I/O threads.
    public static func rekeying(
        _ keys: VaultKeys, to newSource: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(VaultError) -> VaultKeys {
        try await IOThreads.vault.run { () throws(VaultError) -> VaultKeys in
            try keys.rekeyed(to: newSource, scrypt: scrypt, environment: environment)
        }
    }

    /// The same master keys sealed under a key from `newSource` (`vault rekey`): items are unchanged.
    public func rekeyed(
        to newSource: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> VaultKeys {
        let material = try VaultKey.material(from: newSource, environment: environment)
        let unlock = Keyring.newUnlock(for: material, scrypt: scrypt)
        let kek = try Keyring.keyEncryptionKey(unlock, material: material, source: newSource)
        var changed = keyring
        changed.unlock = unlock
        var sealed: [Keyring.SealedKey] = []
        for generation in generations.sorted(by: { $0.id < $1.id }) { sealed.append(try Keyring.seal(generation, with: kek)) }
        changed.keys = sealed
        let opened = Keyring.Opened(keyring: changed, generations: generations, keyEncryptionKey: kek)
        return try VaultKeys(keyringBytes: changed.encoded(), opened: opened, source: newSource, origin: "the re-sealed keyring")
    }

    /// The key generations the keyring holds, oldest first.
    public var keyGenerations: [UInt32] { keyring.keys.map(\.id) }

    /// Whether `other` holds the same master key generations (compared through their keyed hashes, never
    /// the keys themselves): items sealed under one open under the other.
    public func hasSameMasterKeys(as other: VaultKeys) -> Bool {
        let probe = ItemReference(.credential, "sessionkeeper master key comparison")
        let mine = generations.map { ($0.id, $0.fileID(kind: probe.kind, name: probe.name)) }
        let theirs = other.generations.map { ($0.id, $0.fileID(kind: probe.kind, name: probe.name)) }
        return mine.count == theirs.count && zip(mine, theirs).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    // MARK: Items

    /// The keyed-hash id of `item` under the current generation (32 bytes): the name of its file in the
    /// vault folder, the key of its row in a database.
    public func itemID(of item: ItemReference) -> [UInt8] {
        current.fileID(kind: item.kind, name: item.name)
    }

    /// The ids `item` may have, newest generation first (two while a rotation is unfinished).
    public func itemIDs(of item: ItemReference) -> [[UInt8]] {
        generations.map { $0.fileID(kind: item.kind, name: item.name) }
    }

    /// `value` sealed as `item` under the current generation, to be stored under ``itemID(of:)``.
    /// - Parameter counter: a write counter bound into the sealed bytes (the fleet's rows: ``writeCounter(of:)``
    ///   says how the next is chosen); nil for a vault file, which has none.
    public func seal(_ value: [UInt8], for item: ItemReference, counter: UInt64? = nil) throws(VaultError) -> [UInt8] {
        guard ItemFile.isValidName(item.name) else { throw VaultError(.invalidName, item: item) }
        guard value.count <= Vault.maximumValueSize else { throw VaultError(.valueTooLarge(size: value.count), item: item) }
        do {
            return try ItemFile.seal(kind: item.kind, name: item.name, value: value, keys: current, fileID: itemID(of: item), counter: counter)
        } catch {
            throw VaultError(.io(SystemError(call: "AES-GCM seal", path: nil, errno: EINVAL)), item: item)
        }
    }

    /// Opens an item's bytes stored under `id`: its kind, name, value and write counter (0 for bytes sealed
    /// without one), or why it cannot be read (tampered, truncated, a generation this keyring does not hold, …).
    public func open(_ bytes: [UInt8], id: [UInt8]) -> Result<(item: ItemReference, value: [UInt8], counter: UInt64), VaultError.Reason> {
        ItemFile.open(bytes, id: id, generations: generations).map { (ItemReference($0.kind, $0.name), $0.value, $0.counter) }
    }

    /// The write counter sealed bytes claim, read without a key (to choose a higher one for the next write;
    /// ``open(_:id:)`` is what authenticates it); nil for bytes sealed without one, or not an item.
    public static func writeCounter(of bytes: [UInt8]) -> UInt64? {
        ItemFile.counter(of: bytes)
    }
}
