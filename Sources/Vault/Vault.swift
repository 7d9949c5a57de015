import Crypto
import Foundation
import Platform
import Synchronization

/// What ``Vault/list()`` found: every readable item, and an error for each file that could not be read
/// (which never stops the others from being listed).
public struct VaultListing: Sendable {
    public var items: [ItemReference]
    public var problems: [VaultError]
}

/// What ``Vault/rotate()`` did.
public struct RotationSummary: Sendable, Hashable {
    /// The key generation every item is now encrypted under.
    public var keyID: UInt32
    /// Items re-encrypted by this run (an interrupted run's items are not counted again).
    public var reencrypted: Int
}

/// The encrypted store (SPEC section 6): one AES-256-GCM file per item under `state_dir/vault/`, named by
/// a keyed hash of its kind and name, plus `vault/keyring` holding the sealed master key generations.
///
/// Opening a vault takes the state folder's lock (`state_dir/lock`, flock(2)) for the life of the
/// object: one process per state folder. All methods are thread-safe and synchronous; writes are atomic
/// and durable (``Platform/DurableFile``). Errors name the item (kind and name) and the file, never a value.
public final class Vault: Sendable {
    /// The largest value an item may hold (a site's cookies and state are far smaller).
    public static let maximumValueSize = 16 << 20
    /// The keyring's file name inside the vault folder.
    static let keyringName = "keyring"
    static let temporaryMarker = ".tmp-"

    /// The state folder this vault lives in.
    public let stateDirectory: String
    /// `state_dir/vault`.
    public let folder: String
    private let keyringPath: String
    private let lock: FileLock
    private let state: Mutex<State>

    struct State {
        var keyring: Keyring
        /// Newest first.
        var generations: [KeyGeneration]
        var keyEncryptionKey: SymmetricKey
        var source: MasterKeySource
        var isClosed = false

        var current: KeyGeneration { generations.first { $0.id == keyring.current }! }
    }

    private init(stateDirectory: String, lock: FileLock, state: State) {
        self.stateDirectory = stateDirectory
        self.folder = stateDirectory + "/vault"
        self.keyringPath = stateDirectory + "/vault/" + Vault.keyringName
        self.lock = lock
        self.state = Mutex(state)
    }

    enum Creation { case never, ifMissing, mustCreate }

    /// Opens the vault in `stateDirectory`, unlocking it with `key`.
    /// - Parameters:
    ///   - createIfMissing: create a new vault (and, for a key file source, the key file) when the folder
    ///     has none — the daemon's and `secret set`'s first run.
    ///   - environment: where `passphrase_env` and `$CREDENTIALS_DIRECTORY` are looked up.
    public static func open(
        stateDirectory: String, key: MasterKeySource, createIfMissing: Bool = false,
        scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> Vault {
        try open(stateDirectory, key, createIfMissing ? .ifMissing : .never, scrypt, environment)
    }

    /// Creates a new vault (`vault init`); fails when one exists.
    public static func initialize(
        stateDirectory: String, key: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> Vault {
        try open(stateDirectory, key, .mustCreate, scrypt, environment)
    }

    private static func open(
        _ stateDirectory: String, _ key: MasterKeySource, _ creation: Creation, _ scrypt: ScryptParameters,
        _ environment: [String: String]
    ) throws(VaultError) -> Vault {
        let folder = stateDirectory + "/vault"
        let keyringPath = folder + "/" + keyringName
        do {
            try DurableFile.makePrivateFolder(stateDirectory)
        } catch {
            throw VaultError(.io(error), file: stateDirectory)
        }
        let lock: FileLock
        do {
            lock = try FileLock.acquire(stateDirectory + "/lock")
        } catch {
            throw VaultError(.locked(error))
        }
        do {
            try DurableFile.makePrivateFolder(folder)
            try removeStaleTemporaryFiles(in: folder)
        } catch {
            throw VaultError(.io(error), file: folder)
        }

        if Syscall.exists(keyringPath) {
            if creation == .mustCreate { throw VaultError(.alreadyInitialized, file: keyringPath) }
            let bytes: [UInt8]
            do { bytes = try DurableFile.read(keyringPath) } catch { throw VaultError(.io(error), file: keyringPath) }
            var keyring: Keyring
            do { keyring = try Keyring.decode(bytes) } catch { throw VaultError(error.reason, file: keyringPath) }
            let material = try VaultKey.material(from: key, environment: environment)
            let kek = try Keyring.keyEncryptionKey(keyring.unlock, material: material, source: key)
            let generations: [KeyGeneration]
            do { generations = try keyring.unseal(with: kek, source: key) } catch { throw VaultError(error.reason, file: keyringPath) }
            keyring.keys.sort { $0.id < $1.id }
            let state = State(keyring: keyring, generations: generations, keyEncryptionKey: kek, source: key)
            return Vault(stateDirectory: stateDirectory, lock: lock, state: state)
        }

        // Orphans first: a deleted keyring beside item files is not "no vault yet", whatever the command.
        let orphans: Int
        do { orphans = try Syscall.listDirectory(folder).filter(isItemFileName).count } catch { throw VaultError(.io(error), file: folder) }
        guard orphans == 0 else { throw VaultError(.orphanedItems(count: orphans), file: keyringPath) }
        guard creation != .never else { throw VaultError(.notInitialized, file: stateDirectory) }
        if case let .keyFile(path) = key, !Syscall.exists(path) {
            try VaultKey.createKeyFile(at: path)
        }
        let material = try VaultKey.material(from: key, environment: environment)
        let unlock = Keyring.newUnlock(for: material, scrypt: scrypt)
        let kek = try Keyring.keyEncryptionKey(unlock, material: material, source: key)
        let generation = KeyGeneration(id: 1, masterKey: SymmetricKey(size: .bits256))
        let keyring = Keyring(
            magic: Keyring.magic, format: Keyring.formatVersion, unlock: unlock,
            keys: [try Keyring.seal(generation, with: kek)], current: generation.id)
        try write(keyring, to: keyringPath)
        let state = State(keyring: keyring, generations: [generation], keyEncryptionKey: kek, source: key)
        return Vault(stateDirectory: stateDirectory, lock: lock, state: state)
    }

    /// Releases the state folder's lock. Later calls fail with ``VaultError/Reason/closed``.
    public func close() {
        state.withLock { $0.isClosed = true }
        lock.release()
    }

    // MARK: Items

    /// The value of `item`, or nil when the vault has none.
    public func value(of item: ItemReference) throws(VaultError) -> [UInt8]? {
        try withOpenState { (state) throws(VaultError) in
            try Self.checkName(item)
            for generation in state.generations {
                let path = self.path(of: item, in: generation)
                let bytes: [UInt8]
                do throws(SystemError) {
                    bytes = try DurableFile.read(path)
                } catch {
                    if error.errno == ENOENT { continue }
                    throw VaultError(.io(error), item: item, file: path)
                }
                switch Self.decode(bytes, fileName: Self.fileName(of: path), generations: state.generations) {
                case let .success(opened):
                    guard opened.kind == item.kind, opened.name == item.name else {
                        throw VaultError(.tampered, item: item, file: path)
                    }
                    return opened.value
                case let .failure(reason):
                    throw VaultError(reason, item: item, file: path)
                }
            }
            return nil
        }
    }

    /// Stores `value` as `item`, replacing any previous value atomically and durably.
    public func set(_ value: [UInt8], for item: ItemReference) throws(VaultError) {
        try withOpenState { (state) throws(VaultError) in
            try Self.checkName(item)
            guard value.count <= Self.maximumValueSize else { throw VaultError(.valueTooLarge(size: value.count), item: item) }
            try self.store(value, for: item, state: state)
        }
    }

    /// Removes `item`; returns false when there was none.
    @discardableResult
    public func remove(_ item: ItemReference) throws(VaultError) -> Bool {
        try withOpenState { (state) throws(VaultError) in
            try Self.checkName(item)
            var removed = false
            for generation in state.generations {
                let path = self.path(of: item, in: generation)
                do throws(SystemError) { if try Syscall.unlinkIfPresent(path) { removed = true } } catch { throw VaultError(.io(error), item: item, file: path) }
            }
            if removed {
                do throws(SystemError) { try DurableFile.syncFolder(self.folder) } catch { throw VaultError(.io(error), item: item, file: self.folder) }
            }
            return removed
        }
    }

    /// Every item, read by decrypting every file (the names live inside the ciphertexts). A file that
    /// cannot be read becomes a problem in the listing; the others are listed all the same.
    public func list() throws(VaultError) -> VaultListing {
        try withOpenState { (state) throws(VaultError) in
            let scan = try self.scan(state: state)
            return VaultListing(items: scan.items.keys.sorted(), problems: scan.problems)
        }
    }

    /// Every item of `kind` with its value, in one pass over the folder (the daemon's restore of all
    /// sites at start), and the problems met: a file that cannot be read is reported, not fatal.
    public func contents(of kind: ItemKind) throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError]) {
        try withOpenState { (state) throws(VaultError) in
            let scan = try self.scan(state: state, keepingValuesOf: kind)
            var values: [String: [UInt8]] = [:]
            for (item, value) in scan.values { values[item.name] = value }
            return (values, scan.problems)
        }
    }

    /// The names of the items of one kind, sorted, and the problems met while listing.
    public func names(of kind: ItemKind) throws(VaultError) -> (names: [String], problems: [VaultError]) {
        let listing = try list()
        return (listing.items.filter { $0.kind == kind }.map(\.name), listing.problems)
    }

    /// The key generations the keyring holds (two while a rotation is unfinished).
    public var keyGenerations: [UInt32] {
        state.withLock { $0.keyring.keys.map(\.id) }
    }

    // MARK: Keys

    /// Seals the master key generations under a key from `newSource` (a new passphrase, a new key file
    /// that must already exist, …); no item is re-encrypted. The old key stops working.
    public func rekey(to newSource: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
                      environment: [String: String] = ProcessInfo.processInfo.environment) throws(VaultError) {
        try withOpenState { (state) throws(VaultError) in
            let material = try VaultKey.material(from: newSource, environment: environment)
            let unlock = Keyring.newUnlock(for: material, scrypt: scrypt)
            let kek = try Keyring.keyEncryptionKey(unlock, material: material, source: newSource)
            var keyring = state.keyring
            keyring.unlock = unlock
            var sealed: [Keyring.SealedKey] = []
            for generation in state.generations.sorted(by: { $0.id < $1.id }) {
                sealed.append(try Keyring.seal(generation, with: kek))
            }
            keyring.keys = sealed
            try Self.write(keyring, to: self.keyringPath)
            state.keyring = keyring
            state.keyEncryptionKey = kek
            state.source = newSource
        }
    }

    /// Re-encrypts every item under a new master key. Crash-safe: the keyring first gains the new
    /// generation (both are kept), items move one by one (write the new file, then unlink the old),
    /// and only when no old file remains is the old generation dropped. Run again after an interruption,
    /// it finishes the same rotation instead of starting another.
    @discardableResult
    public func rotate() throws(VaultError) -> RotationSummary {
        try rotate(stoppingAfter: nil)
    }

    /// `rotate()`, stopping as a crash would after `limit` items (tests of the recovery).
    func rotate(stoppingAfter limit: Int?) throws(VaultError) -> RotationSummary {
        try withOpenState { (state) throws(VaultError) in
            if state.keyring.keys.count == 1 {
                let next = KeyGeneration(id: state.keyring.current + 1, masterKey: SymmetricKey(size: .bits256))
                var keyring = state.keyring
                keyring.keys.append(try Keyring.seal(next, with: state.keyEncryptionKey))
                keyring.current = next.id
                try Self.write(keyring, to: self.keyringPath)
                state.keyring = keyring
                state.generations.insert(next, at: 0)
            }
            let target = state.current
            var moved = 0
            var unreadable: [String] = []
            let names: [String]
            do throws(SystemError) { names = try Syscall.listDirectory(self.folder) } catch { throw VaultError(.io(error), file: self.folder) }
            for name in names where Self.isItemFileName(name) {
                if let limit, moved >= limit { return RotationSummary(keyID: target.id, reencrypted: moved) }
                let path = self.folder + "/" + name
                let bytes: [UInt8]
                do throws(SystemError) { bytes = try DurableFile.read(path) } catch { throw VaultError(.io(error), file: path) }
                if case .success(target.id) = ItemFile.keyID(of: bytes) { continue }
                guard case let .success(opened) = Self.decode(bytes, fileName: name, generations: state.generations) else {
                    unreadable.append(path)
                    continue
                }
                let item = ItemReference(opened.kind, opened.name)
                let newPath = self.path(of: item, in: target)
                // A crash after the new file was written leaves both: the new one is the newer value.
                if !Syscall.exists(newPath) {
                    try self.writeItem(opened.value, for: item, generation: target, path: newPath)
                    moved += 1
                }
                do throws(SystemError) { try Syscall.unlinkIfPresent(path) } catch { throw VaultError(.io(error), item: item, file: path) }
            }
            do throws(SystemError) { try DurableFile.syncFolder(self.folder) } catch { throw VaultError(.io(error), file: self.folder) }
            guard unreadable.isEmpty else { throw VaultError(.rotationIncomplete(unreadableFiles: unreadable.sorted())) }
            var keyring = state.keyring
            keyring.keys = keyring.keys.filter { $0.id == target.id }
            try Self.write(keyring, to: self.keyringPath)
            state.keyring = keyring
            state.generations = [target]
            return RotationSummary(keyID: target.id, reencrypted: moved)
        }
    }

    // MARK: Internals

    private func withOpenState<T>(_ body: (inout State) throws(VaultError) -> T) throws(VaultError) -> T {
        try state.withLock { (state) throws(VaultError) -> T in
            guard !state.isClosed else { throw VaultError(.closed, file: stateDirectory) }
            return try body(&state)
        }
    }

    func path(of item: ItemReference, in generation: KeyGeneration) -> String {
        folder + "/" + generation.fileID(kind: item.kind, name: item.name).hexString
    }

    private func store(_ value: [UInt8], for item: ItemReference, state: State) throws(VaultError) {
        let current = state.current
        try writeItem(value, for: item, generation: current, path: path(of: item, in: current))
        // While a rotation is unfinished the item may also exist under the old generation's name.
        var removed = false
        for generation in state.generations where generation.id != current.id {
            let old = path(of: item, in: generation)
            do throws(SystemError) { if try Syscall.unlinkIfPresent(old) { removed = true } } catch { throw VaultError(.io(error), item: item, file: old) }
        }
        if removed {
            do throws(SystemError) { try DurableFile.syncFolder(folder) } catch { throw VaultError(.io(error), item: item, file: folder) }
        }
    }

    private func writeItem(_ value: [UInt8], for item: ItemReference, generation: KeyGeneration, path: String) throws(VaultError) {
        let fileID = generation.fileID(kind: item.kind, name: item.name)
        let bytes: [UInt8]
        do {
            bytes = try ItemFile.seal(kind: item.kind, name: item.name, value: value, keys: generation, fileID: fileID)
        } catch {
            throw VaultError(.io(SystemError(call: "AES-GCM seal", path: path, errno: EINVAL)), item: item, file: path)
        }
        do throws(SystemError) { try DurableFile.write(bytes, to: path, mode: 0o600) } catch { throw VaultError(.io(error), item: item, file: path) }
    }

    struct Scan {
        var items: [ItemReference: UInt32] = [:]
        var values: [ItemReference: [UInt8]] = [:]
        var problems: [VaultError] = []
    }

    private func scan(state: State, keepingValuesOf kept: ItemKind? = nil) throws(VaultError) -> Scan {
        let names: [String]
        do throws(SystemError) { names = try Syscall.listDirectory(folder) } catch { throw VaultError(.io(error), file: folder) }
        var scan = Scan()
        for name in names where name != Self.keyringName && !name.contains(Self.temporaryMarker) {
            let path = folder + "/" + name
            guard Self.isItemFileName(name) else {
                scan.problems.append(VaultError(.foreignFile, file: path))
                continue
            }
            let bytes: [UInt8]
            do throws(SystemError) {
                bytes = try DurableFile.read(path)
            } catch {
                if error.errno != ENOENT { scan.problems.append(VaultError(.io(error), file: path)) }
                continue
            }
            switch Self.decode(bytes, fileName: name, generations: state.generations) {
            case let .success(opened):
                let item = ItemReference(opened.kind, opened.name)
                guard case let .success(id) = ItemFile.keyID(of: bytes) else { continue }
                if let known = scan.items[item], known > id { continue }
                scan.items[item] = id
                if opened.kind == kept { scan.values[item] = opened.value }
            case let .failure(reason):
                scan.problems.append(VaultError(reason, file: path))
            }
        }
        return scan
    }

    static func decode(_ bytes: [UInt8], fileName: String, generations: [KeyGeneration]) -> Result<ItemFile.Opened, VaultError.Reason> {
        let id: UInt32
        switch ItemFile.keyID(of: bytes) {
        case let .success(value): id = value
        case let .failure(reason): return .failure(reason)
        }
        guard let generation = generations.first(where: { $0.id == id }) else { return .failure(.unknownKeyID(id)) }
        guard let fileID = [UInt8](hexString: fileName), fileID.count == 32 else { return .failure(.foreignFile) }
        return ItemFile.open(bytes, keys: generation, fileID: fileID)
    }

    static func fileName(of path: String) -> String {
        String(path[path.index(after: path.lastIndex(of: "/")!)...])
    }

    static func isItemFileName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    private static func checkName(_ item: ItemReference) throws(VaultError) {
        guard ItemFile.isValidName(item.name) else { throw VaultError(.invalidName, item: item) }
    }

    private static func write(_ keyring: Keyring, to path: String) throws(VaultError) {
        do { try DurableFile.write(keyring.encoded(), to: path, mode: 0o600) } catch { throw VaultError(.io(error), file: path) }
    }

    /// Temporary files left by a write that a crash interrupted; safe to remove under the lock.
    private static func removeStaleTemporaryFiles(in folder: String) throws(SystemError) {
        var removed = false
        for name in try Syscall.listDirectory(folder) where name.contains(temporaryMarker) {
            if try Syscall.unlinkIfPresent(folder + "/" + name) { removed = true }
        }
        if removed { try DurableFile.syncFolder(folder) }
    }
}
