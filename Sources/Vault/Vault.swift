import Crypto
import Foundation
import Locking
import Platform

/// What ``Vault/list()`` found: every readable item, and an error for each file that could not be read
/// (which never stops the others from being listed).
public struct VaultListing: Sendable {
    public var items: [ItemReference]
    public var problems: [VaultError]

    public init(items: [ItemReference], problems: [VaultError]) {
        self.items = items
        self.problems = problems
    }
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
/// Several processes may use one vault at once (the daemon, `login`, `secret`, `vault`): an open vault
/// holds no lock. Items are replaced atomically and durably (``Platform/DurableFile``) and always read
/// afresh from their files, so a process sees what another one wrote. The keyring changes (`init`,
/// `rekey`, `rotate`) under a short exclusive lock on `state_dir/keyring.lock`; item writes and removals
/// hold the same lock shared, re-reading the keyring under it, so they never write under a key
/// generation that a concurrent rotation is about to drop. docs/VAULT.md gives the rules.
///
/// All methods are thread-safe and synchronous (they block on file I/O); ``background`` offers the item
/// operations as async calls that run on the vault's I/O threads. Errors name the item (kind and name)
/// and the file, never a value.
public final class Vault: Sendable {
    /// The largest value an item may hold (a site's cookies and state are far smaller).
    public static let maximumValueSize = 16 << 20
    /// How long an operation waits for the keyring lock before failing with
    /// ``VaultError/Reason/keyringBusy(holderPID:waited:)``. Holders keep it for a keyring write or a
    /// batch of a rotation (milliseconds on a healthy disk), so this is long only for a stuck process.
    public static let defaultLockTimeout: Duration = .seconds(30)
    /// The keyring's file name inside the vault folder.
    static let keyringName = "keyring"
    /// The lock file guarding keyring changes, in the state folder (beside `vault/`, so that listings
    /// of the vault folder show only the keyring and items).
    static let keyringLockName = "keyring.lock"
    static let temporaryMarker = ".tmp-"
    /// A rotation re-encrypts at most this many items, or for at most ``rotationBatchTime``, per hold of
    /// the exclusive lock, then lets writers in.
    static let rotationBatchSize = 64
    static let rotationBatchTime: Duration = .milliseconds(50)

    /// The state folder this vault lives in.
    public let stateDirectory: String
    /// `state_dir/vault`.
    public let folder: String
    private let keyringPath: String
    private let keyringLockPath: String
    let lockTimeout: Duration
    private let state: Locked<State>

    struct State {
        /// The keyring file's bytes when this process last read or wrote it: when the file holds other
        /// bytes, another process changed the keyring.
        var keyringBytes: [UInt8]
        var keyring: Keyring
        /// Newest first.
        var generations: [KeyGeneration]
        /// The unlock description (method and salt) that `keyEncryptionKey` belongs to; after a
        /// `vault rekey` in another process the keyring's differs.
        var ownUnlock: Keyring.Unlock
        var keyEncryptionKey: ProtectedKey
        var source: MasterKeySource
        var isClosed = false
    }

    /// What one operation works with, copied out of ``State`` so that file I/O runs without the mutex.
    struct Keys: Sendable {
        var keyringBytes: [UInt8]
        var keyring: Keyring
        /// Newest first.
        var generations: [KeyGeneration]
        var current: KeyGeneration
        var keyEncryptionKey: ProtectedKey
        var ownsKeyring: Bool

        init(_ state: State, keyringPath: String) throws(VaultError) {
            guard let current = state.generations.first(where: { $0.id == state.keyring.current }) else {
                throw VaultError(.keyringDamaged("the current key generation \(state.keyring.current) is missing"), file: keyringPath)
            }
            keyringBytes = state.keyringBytes
            keyring = state.keyring
            generations = state.generations
            self.current = current
            keyEncryptionKey = state.keyEncryptionKey
            ownsKeyring = state.keyring.unlock.isSame(as: state.ownUnlock)
        }
    }

    private init(stateDirectory: String, lockTimeout: Duration, state: State) {
        self.stateDirectory = stateDirectory
        self.folder = stateDirectory + "/vault"
        self.keyringPath = stateDirectory + "/vault/" + Vault.keyringName
        self.keyringLockPath = stateDirectory + "/" + Vault.keyringLockName
        self.lockTimeout = lockTimeout
        self.state = Locked(state)
    }

    enum Creation {
        case never, ifMissing, mustCreate
        /// Create it, when missing, with this keyring (`store migrate --to-folder`: the database's).
        case seeded(VaultKeys)

        var isMustCreate: Bool { if case .mustCreate = self { true } else { false } }
        var isNever: Bool { if case .never = self { true } else { false } }
    }

    /// Opens the vault in `stateDirectory`, unlocking it with `key`. Takes no lock: other processes may
    /// use the vault at the same time.
    /// - Parameters:
    ///   - createIfMissing: create a new vault (and, for a key file source, the key file) when the folder
    ///     has none — the daemon's and `secret set`'s first run.
    ///   - environment: where `passphrase_env` and `$CREDENTIALS_DIRECTORY` are looked up.
    public static func open(
        stateDirectory: String, key: MasterKeySource, createIfMissing: Bool = false,
        scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> Vault {
        try open(stateDirectory, key, createIfMissing ? .ifMissing : .never, scrypt, environment, defaultLockTimeout)
    }

    /// Opens the vault in `stateDirectory`; when the folder has none, creates it with `seed`'s keyring (the
    /// same master keys: `store migrate --to-folder` copies a fleet's keyring into a folder). `key` must be
    /// the source that unlocked `seed`.
    public static func open(
        stateDirectory: String, key: MasterKeySource, seedingWith seed: VaultKeys,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> Vault {
        try open(stateDirectory, key, .seeded(seed), ScryptParameters(), environment, defaultLockTimeout)
    }

    /// Whether `stateDirectory` holds a vault (its keyring file exists).
    public static func exists(stateDirectory: String) -> Bool {
        Syscall.exists(stateDirectory + "/vault/" + keyringName)
    }

    /// Creates a new vault (`vault init`); fails when one exists, also when another process created it
    /// a moment earlier.
    public static func initialize(
        stateDirectory: String, key: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(VaultError) -> Vault {
        try open(stateDirectory, key, .mustCreate, scrypt, environment, defaultLockTimeout)
    }

    static func open(
        _ stateDirectory: String, _ key: MasterKeySource, _ creation: Creation, _ scrypt: ScryptParameters,
        _ environment: [String: String], _ lockTimeout: Duration
    ) throws(VaultError) -> Vault {
        let folder = stateDirectory + "/vault"
        let keyringPath = folder + "/" + keyringName
        do {
            try DurableFile.makePrivateFolder(stateDirectory)
            // The default key file is created here: a crash while writing it leaves a temporary file of key
            // bytes beside it, which no later write would ever replace.
            try removeStaleTemporaryFiles(in: stateDirectory)
        } catch {
            throw VaultError(.io(error), file: stateDirectory)
        }
        do {
            try DurableFile.makePrivateFolder(folder)
            try removeStaleTemporaryFiles(in: folder)
        } catch {
            throw VaultError(.io(error), file: folder)
        }
        func made(_ state: State) -> Vault { Vault(stateDirectory: stateDirectory, lockTimeout: lockTimeout, state: state) }

        if let bytes = try readKeyringIfPresent(keyringPath) {
            if creation.isMustCreate { throw VaultError(.alreadyInitialized, file: keyringPath) }
            return made(try unlock(bytes, keyringPath: keyringPath, key: key, material: nil, environment: environment))
        }

        // Orphans first: a deleted keyring beside item files is not "no vault yet", whatever the command.
        let orphans: Int
        do { orphans = try Syscall.listDirectory(folder).filter(isItemFileName).count } catch { throw VaultError(.io(error), file: folder) }
        guard orphans == 0 else { throw VaultError(.orphanedItems(count: orphans), file: keyringPath) }
        guard !creation.isNever else { throw VaultError(.notInitialized, file: stateDirectory) }
        if case let .seeded(seed) = creation {
            let lock = try acquireKeyringLock(stateDirectory + "/" + keyringLockName, .exclusive, lockTimeout)
            defer { lock.release() }
            if let bytes = try readKeyringIfPresent(keyringPath) {
                return made(try unlock(bytes, keyringPath: keyringPath, key: key, material: nil, environment: environment))
            }
            let bytes = try write(seed.keyring, to: keyringPath)
            return made(State(
                keyringBytes: bytes, keyring: seed.keyring, generations: seed.generations, ownUnlock: seed.keyring.unlock,
                keyEncryptionKey: seed.keyEncryptionKey, source: key))
        }

        // The key material is obtained before taking the lock (a passphrase command may take its time),
        // except from a key file that this call is to create: that happens under the lock, so two
        // processes creating the vault at once never make two key files.
        let material: KeyMaterial?
        if case let .keyFile(path) = key, !Syscall.exists(path) {
            material = nil
        } else {
            material = try VaultKey.material(from: key, environment: environment)
        }
        let lock = try acquireKeyringLock(stateDirectory + "/" + keyringLockName, .exclusive, lockTimeout)
        defer { lock.release() }
        // Another process may have created the vault while this one waited.
        if let bytes = try readKeyringIfPresent(keyringPath) {
            if creation.isMustCreate { throw VaultError(.alreadyInitialized, file: keyringPath) }
            return made(try unlock(bytes, keyringPath: keyringPath, key: key, material: material, environment: environment))
        }
        if case let .keyFile(path) = key, !Syscall.exists(path) {
            try VaultKey.createKeyFile(at: path)
        }
        let keyMaterial: KeyMaterial
        if let material { keyMaterial = material } else { keyMaterial = try VaultKey.material(from: key, environment: environment) }
        let created = try Keyring.create(material: keyMaterial, source: key, scrypt: scrypt)
        let bytes = try write(created.keyring, to: keyringPath)
        return made(State(
            keyringBytes: bytes, keyring: created.keyring, generations: created.generations, ownUnlock: created.keyring.unlock,
            keyEncryptionKey: created.keyEncryptionKey, source: key))
    }

    /// The keyring's bytes, or nil when there is no keyring.
    private static func readKeyringIfPresent(_ path: String) throws(VaultError) -> [UInt8]? {
        do throws(SystemError) {
            return try DurableFile.read(path)
        } catch {
            if error.errno == ENOENT { return nil }
            throw VaultError(.io(error), file: path)
        }
    }

    /// Opens an existing keyring with `key` (its material obtained here unless given).
    private static func unlock(
        _ bytes: [UInt8], keyringPath: String, key: MasterKeySource, material: KeyMaterial?, environment: [String: String]
    ) throws(VaultError) -> State {
        let opened = try Keyring.open(bytes, key: key, material: material, environment: environment, origin: keyringPath)
        return State(
            keyringBytes: bytes, keyring: opened.keyring, generations: opened.generations, ownUnlock: opened.keyring.unlock,
            keyEncryptionKey: opened.keyEncryptionKey, source: key)
    }

    /// The vault's keys as its keyring holds them now (re-read), for sealing the same items elsewhere.
    public func keys() throws(VaultError) -> VaultKeys {
        let keys = try refreshedKeys()
        let state = self.state.withLock { $0 }
        let opened = Keyring.Opened(keyring: keys.keyring, generations: keys.generations, keyEncryptionKey: keys.keyEncryptionKey)
        return try VaultKeys(keyringBytes: keys.keyringBytes, opened: opened, source: state.source, origin: keyringPath)
    }

    /// Marks the vault closed: later calls fail with ``VaultError/Reason/closed``. An open vault holds no
    /// lock, so there is nothing else to release.
    public func close() {
        state.withLock { $0.isClosed = true }
    }

    // MARK: Items

    /// The value of `item`, or nil when the vault has none. Reads the item's file afresh, so a value
    /// another process wrote is seen.
    public func value(of item: ItemReference) throws(VaultError) -> [UInt8]? {
        try Self.checkName(item)
        var keys = try currentKeys()
        // Another process's rotation may have moved the item under a generation this one has not read
        // yet (it is then missing under the names known here, or its file names an unknown generation),
        // or be moving it right now: re-read the keyring and look again, a bounded number of times.
        for attempt in 1...3 {
            switch try lookUp(item, keys: keys) {
            case let .found(value):
                return value
            case let .unknownGeneration(error):
                let fresh = try refreshedKeys()
                guard attempt < 3, fresh.keyringBytes != keys.keyringBytes else { throw error }
                keys = fresh
            case .missing:
                guard attempt < 3 else { return nil }
                let fresh = try refreshedKeys()
                guard fresh.keyringBytes != keys.keyringBytes || fresh.generations.count > 1 else { return nil }
                keys = fresh
            }
        }
        return nil
    }

    enum Lookup {
        case found([UInt8])
        case missing
        case unknownGeneration(VaultError)
    }

    private func lookUp(_ item: ItemReference, keys: Keys) throws(VaultError) -> Lookup {
        // Newest generation first: a rotation writes the new file before it unlinks the old one.
        for generation in keys.generations {
            let path = self.path(of: item, in: generation)
            let bytes: [UInt8]
            do throws(SystemError) {
                bytes = try DurableFile.read(path)
            } catch {
                if error.errno == ENOENT { continue }
                throw VaultError(.io(error), item: item, file: path)
            }
            switch Self.decode(bytes, fileName: Self.fileName(of: path), generations: keys.generations) {
            case let .success(opened):
                guard opened.kind == item.kind, opened.name == item.name else {
                    throw VaultError(.tampered, item: item, file: path)
                }
                return .found(opened.value)
            case let .failure(reason):
                if case .unknownKeyID = reason { return .unknownGeneration(VaultError(reason, item: item, file: path)) }
                throw VaultError(reason, item: item, file: path)
            }
        }
        return .missing
    }

    /// Stores `value` as `item`, replacing any previous value atomically and durably.
    public func set(_ value: [UInt8], for item: ItemReference) throws(VaultError) {
        try Self.checkName(item)
        guard value.count <= Self.maximumValueSize else { throw VaultError(.valueTooLarge(size: value.count), item: item) }
        _ = try currentKeys()
        try withKeyringLock(.shared) { () throws(VaultError) in
            try self.store(value, for: item, keys: try self.refreshedKeys())
        }
    }

    /// Removes `item`; returns false when there was none.
    @discardableResult
    public func remove(_ item: ItemReference) throws(VaultError) -> Bool {
        try Self.checkName(item)
        _ = try currentKeys()
        return try withKeyringLock(.shared) { () throws(VaultError) -> Bool in
            let keys = try self.refreshedKeys()
            var removed = false
            for generation in keys.generations {
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
        let scan = try scanAgreeingWithKeyring()
        return VaultListing(items: scan.items.keys.sorted(), problems: scan.problems)
    }

    /// Every item of `kind` with its value, in one pass over the folder (the daemon's restore of all
    /// sites at start), and the problems met: a file that cannot be read is reported, not fatal.
    public func contents(of kind: ItemKind) throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError]) {
        let scan = try scanAgreeingWithKeyring(keepingValuesOf: kind)
        var values: [String: [UInt8]] = [:]
        for (item, value) in scan.values { values[item.name] = value }
        return (values, scan.problems)
    }

    /// The names of the items of one kind, sorted, and the problems met while listing.
    public func names(of kind: ItemKind) throws(VaultError) -> (names: [String], problems: [VaultError]) {
        let listing = try list()
        return (listing.items.filter { $0.kind == kind }.map(\.name), listing.problems)
    }

    /// The key generations the keyring holds (two while a rotation is unfinished), read afresh when
    /// the keyring can be read.
    public var keyGenerations: [UInt32] {
        if let keys = try? refreshedKeys() { return keys.keyring.keys.map(\.id) }
        return state.withLock { $0.keyring.keys.map(\.id) }
    }

    // MARK: Keys

    /// Seals the master key generations under a key from `newSource` (a new passphrase, a new key file
    /// that must already exist, …); no item is re-encrypted. The old key stops working. Other
    /// processes that have the vault open keep their master keys and go on reading and writing items.
    public func rekey(to newSource: MasterKeySource, scrypt: ScryptParameters = ScryptParameters(),
                      environment: [String: String] = ProcessInfo.processInfo.environment) throws(VaultError) {
        _ = try currentKeys()
        // The new key before the lock: a passphrase command and scrypt take their time.
        let material = try VaultKey.material(from: newSource, environment: environment)
        let unlock = Keyring.newUnlock(for: material, scrypt: scrypt)
        let kek = try Keyring.keyEncryptionKey(unlock, material: material, source: newSource)
        try withKeyringLock(.exclusive) { () throws(VaultError) in
            // The generations as the keyring holds them now: another process may have rotated.
            let keys = try self.refreshedKeys(requiringOwnKey: true)
            var keyring = keys.keyring
            keyring.unlock = unlock
            var sealed: [Keyring.SealedKey] = []
            for generation in keys.generations.sorted(by: { $0.id < $1.id }) {
                sealed.append(try Keyring.seal(generation, with: kek))
            }
            keyring.keys = sealed
            try self.commit(keyring, generations: keys.generations, newKey: (kek, newSource))
        }
    }

    /// Re-encrypts every item under a new master key. Crash-safe: the keyring first gains the new
    /// generation (both are kept), items move one by one (write the new file, then unlink the old),
    /// and only when no old file remains is the old generation dropped. Run again after an interruption,
    /// it finishes the same rotation instead of starting another. Other processes keep reading and
    /// writing meanwhile: items move in short batches under the exclusive keyring lock.
    @discardableResult
    public func rotate() throws(VaultError) -> RotationSummary {
        try rotate(stoppingAfter: nil)
    }

    /// `rotate()`, stopping as a crash would after `limit` items (tests of the recovery).
    func rotate(stoppingAfter limit: Int?) throws(VaultError) -> RotationSummary {
        _ = try currentKeys()
        // 1. The keyring gains the new generation, unless an unfinished rotation already added one.
        let target = try withKeyringLock(.exclusive) { () throws(VaultError) -> KeyGeneration in
            let keys = try self.refreshedKeys(requiringOwnKey: true)
            if keys.generations.count > 1 { return keys.current }
            let newest = keys.generations.map(\.id).max() ?? keys.current.id
            let next = try KeyGeneration(id: newest + 1, masterKey: SymmetricKey(size: .bits256))
            var keyring = keys.keyring
            keyring.keys.append(try Keyring.seal(next, with: keys.keyEncryptionKey))
            keyring.current = next.id
            try self.commit(keyring, generations: [next] + keys.generations, newKey: nil)
            return next
        }

        // 2. Items move in batches under the exclusive lock. Writers wait only for a batch, and every
        //    write after step 1 already uses the new generation.
        let names: [String]
        do throws(SystemError) { names = try Syscall.listDirectory(folder).filter(Self.isItemFileName) } catch { throw VaultError(.io(error), file: folder) }
        var moved = 0
        var index = 0
        let clock = ContinuousClock()
        while index < names.count {
            if let limit, moved >= limit { return RotationSummary(keyID: target.id, reencrypted: moved) }
            try withKeyringLock(.exclusive) { () throws(VaultError) in
                let keys = try self.refreshedKeys()
                let batchEnd = clock.now.advanced(by: Self.rotationBatchTime)
                var count = 0
                while index < names.count, count < Self.rotationBatchSize, clock.now < batchEnd {
                    if let limit, moved >= limit { return }
                    if case .moved = try self.move(names[index], to: target, keys: keys) { moved += 1 }
                    index += 1
                    count += 1
                }
            }
            // Let a writer polling for the lock in.
            if index < names.count { Thread.sleep(forTimeInterval: 0.003) }
        }

        // 3. Under the lock, no file may remain under an older generation; then the keyring drops them.
        return try withKeyringLock(.exclusive) { () throws(VaultError) -> RotationSummary in
            let keys = try self.refreshedKeys(requiringOwnKey: true)
            // Another process finished this rotation (and may have begun another).
            guard keys.current.id == target.id, keys.generations.count > 1 else {
                return RotationSummary(keyID: target.id, reencrypted: moved)
            }
            let names: [String]
            do throws(SystemError) { names = try Syscall.listDirectory(self.folder).filter(Self.isItemFileName) } catch { throw VaultError(.io(error), file: self.folder) }
            var unreadable: [String] = []
            for name in names {
                switch try self.move(name, to: target, keys: keys) {
                case .moved: moved += 1
                case let .unreadable(path): unreadable.append(path)
                case .alreadyCurrent: break
                }
            }
            do throws(SystemError) { try DurableFile.syncFolder(self.folder) } catch { throw VaultError(.io(error), file: self.folder) }
            guard unreadable.isEmpty else { throw VaultError(.rotationIncomplete(unreadableFiles: unreadable.sorted())) }
            var keyring = keys.keyring
            keyring.keys = keyring.keys.filter { $0.id == target.id }
            try self.commit(keyring, generations: [target], newKey: nil)
            return RotationSummary(keyID: target.id, reencrypted: moved)
        }
    }

    enum MoveOutcome {
        case moved
        case alreadyCurrent
        case unreadable(String)
    }

    /// Moves one file to `target` (under the exclusive lock, so no writer or remover races it).
    private func move(_ name: String, to target: KeyGeneration, keys: Keys) throws(VaultError) -> MoveOutcome {
        let path = folder + "/" + name
        let bytes: [UInt8]
        do throws(SystemError) {
            bytes = try DurableFile.read(path)
        } catch {
            // Removed, or moved by another rotating process, since the folder was listed.
            if error.errno == ENOENT { return .alreadyCurrent }
            throw VaultError(.io(error), file: path)
        }
        if case .success(target.id) = ItemFile.keyID(of: bytes) { return .alreadyCurrent }
        guard case let .success(opened) = Self.decode(bytes, fileName: name, generations: keys.generations) else {
            return .unreadable(path)
        }
        let item = ItemReference(opened.kind, opened.name)
        let newPath = self.path(of: item, in: target)
        var outcome = MoveOutcome.alreadyCurrent
        // Both files exist after a crash between writing the new one and unlinking the old, or after a
        // write whose unlink of the older file was cut short: the new one holds the newer value.
        if !Syscall.exists(newPath) {
            try writeItem(opened.value, for: item, generation: target, path: newPath)
            outcome = .moved
        }
        do throws(SystemError) { try Syscall.unlinkIfPresent(path) } catch { throw VaultError(.io(error), item: item, file: path) }
        return outcome
    }

    // MARK: Internals

    /// The keys as this process last read them; fails once the vault is closed.
    private func currentKeys() throws(VaultError) -> Keys {
        try state.withLock { (state) throws(VaultError) -> Keys in
            guard !state.isClosed else { throw VaultError(.closed, file: stateDirectory) }
            return try Keys(state, keyringPath: keyringPath)
        }
    }

    /// Re-reads the keyring file and takes in what another process changed (a rotation's generations,
    /// a rekey). After a rekey elsewhere this process no longer holds the key that opens the keyring,
    /// but the master keys it has are unchanged and stay usable; a generation it has not seen is then
    /// out of reach, and so is any keyring change (`requiringOwnKey`).
    private func refreshedKeys(requiringOwnKey: Bool = false) throws(VaultError) -> Keys {
        let bytes: [UInt8]
        do throws(SystemError) { bytes = try DurableFile.read(keyringPath) } catch { throw VaultError(.io(error), file: keyringPath) }
        let path = keyringPath
        return try state.withLock { (state) throws(VaultError) -> Keys in
            guard !state.isClosed else { throw VaultError(.closed, file: stateDirectory) }
            if bytes != state.keyringBytes {
                var keyring: Keyring
                do throws(VaultError) { keyring = try Keyring.decode(bytes) } catch { throw VaultError(error.reason, file: path) }
                keyring.keys.sort { $0.id < $1.id }
                let generations: [KeyGeneration]
                if keyring.unlock.isSame(as: state.ownUnlock) {
                    do throws(VaultError) {
                        generations = try keyring.unseal(with: state.keyEncryptionKey, source: state.source)
                    } catch {
                        throw VaultError(error.reason, file: path)
                    }
                } else {
                    let known = keyring.keys.compactMap { sealed in state.generations.first { $0.id == sealed.id } }
                    guard known.count == keyring.keys.count else {
                        throw VaultError(.rekeyedElsewhere(source: state.source.description), file: path)
                    }
                    generations = known.sorted { $0.id > $1.id }
                }
                state.keyringBytes = bytes
                state.keyring = keyring
                state.generations = generations
            }
            if requiringOwnKey, !state.keyring.unlock.isSame(as: state.ownUnlock) {
                throw VaultError(.rekeyedElsewhere(source: state.source.description), file: path)
            }
            return try Keys(state, keyringPath: path)
        }
    }

    /// Writes a changed keyring (under the exclusive lock) and makes it this process's.
    private func commit(_ keyring: Keyring, generations: [KeyGeneration], newKey: (ProtectedKey, MasterKeySource)?) throws(VaultError) {
        let bytes = try Self.write(keyring, to: keyringPath)
        state.withLock { state in
            state.keyringBytes = bytes
            state.keyring = keyring
            state.generations = generations.sorted { $0.id > $1.id }
            if case let (kek, source)? = newKey {
                state.ownUnlock = keyring.unlock
                state.keyEncryptionKey = kek
                state.source = source
            }
        }
    }

    private func withKeyringLock<T>(_ mode: FileLock.Mode, _ body: () throws(VaultError) -> T) throws(VaultError) -> T {
        let lock = try Self.acquireKeyringLock(keyringLockPath, mode, lockTimeout)
        defer { lock.release() }
        return try body()
    }

    private static func acquireKeyringLock(_ path: String, _ mode: FileLock.Mode, _ timeout: Duration) throws(VaultError) -> FileLock {
        do {
            return try FileLock.acquire(path, mode: mode, waitingUpTo: timeout)
        } catch {
            switch error {
            case let .held(_, holderPID): throw VaultError(.keyringBusy(holderPID: holderPID, waited: timeout), file: path)
            case let .system(systemError): throw VaultError(.io(systemError), file: path)
            }
        }
    }

    /// The file names `items` have in ``folder``, under every key generation of the keyring as it is on disk now
    /// (another process may have rotated the keys; until a rotation ends an item may be under an older
    /// generation's name): what a watcher of the folder reports, mapped back to the items. Only the key's holder
    /// can compute them.
    public func fileNames(of items: some Sequence<ItemReference>) throws(VaultError) -> [String: ItemReference] {
        let keys: Keys
        do throws(VaultError) { keys = try refreshedKeys() } catch { keys = try currentKeys() }
        var names: [String: ItemReference] = [:]
        for item in items {
            for generation in keys.generations { names[generation.fileID(kind: item.kind, name: item.name).hexString] = item }
        }
        return names
    }

    /// Whether `name` (in ``folder``) is the keyring's file: when it changes, items may have new file names.
    public static func isKeyringFileName(_ name: String) -> Bool { name == keyringName }

    func path(of item: ItemReference, in generation: KeyGeneration) -> String {
        folder + "/" + generation.fileID(kind: item.kind, name: item.name).hexString
    }

    /// Writes `item` under the current generation; called with the keyring lock held shared.
    private func store(_ value: [UInt8], for item: ItemReference, keys: Keys) throws(VaultError) {
        let current = keys.current
        try writeItem(value, for: item, generation: current, path: path(of: item, in: current))
        // While a rotation is unfinished the item may also exist under the old generation's name.
        var removed = false
        for generation in keys.generations where generation.id != current.id {
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
        /// A file named by the listing was gone when read (removed, or moved by a rotation).
        var sawVanishedFile = false
        /// A file is encrypted under a generation the keys used do not hold.
        var sawUnknownGeneration = false
    }

    /// A scan of the folder that agrees with the keyring: when it met a file under a generation this
    /// process has not read yet, or a file that vanished while a rotation was under way, the keyring is
    /// read again and the folder scanned again (at most twice more).
    private func scanAgreeingWithKeyring(keepingValuesOf kept: ItemKind? = nil) throws(VaultError) -> Scan {
        var keys = try currentKeys()
        var attempt = 1
        while true {
            let scan = try scan(keys: keys, keepingValuesOf: kept)
            guard scan.sawUnknownGeneration || scan.sawVanishedFile, attempt < 3 else { return scan }
            let fresh = try refreshedKeys()
            let changed = fresh.keyringBytes != keys.keyringBytes
            guard changed || (scan.sawVanishedFile && fresh.generations.count > 1) else { return scan }
            keys = fresh
            attempt += 1
        }
    }

    private func scan(keys: Keys, keepingValuesOf kept: ItemKind?) throws(VaultError) -> Scan {
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
                if error.errno == ENOENT {
                    scan.sawVanishedFile = true
                } else {
                    scan.problems.append(VaultError(.io(error), file: path))
                }
                continue
            }
            switch Self.decode(bytes, fileName: name, generations: keys.generations) {
            case let .success(opened):
                let item = ItemReference(opened.kind, opened.name)
                guard case let .success(id) = ItemFile.keyID(of: bytes) else { continue }
                if let known = scan.items[item], known > id { continue }
                scan.items[item] = id
                if opened.kind == kept { scan.values[item] = opened.value }
            case let .failure(reason):
                if case .unknownKeyID = reason { scan.sawUnknownGeneration = true }
                scan.problems.append(VaultError(reason, file: path))
            }
        }
        return scan
    }

    static func decode(_ bytes: [UInt8], fileName: String, generations: [KeyGeneration]) -> Result<ItemFile.Opened, VaultError.Reason> {
        if case let .failure(reason) = ItemFile.keyID(of: bytes) { return .failure(reason) }
        guard let fileID = [UInt8](hexString: fileName), fileID.count == 32 else { return .failure(.foreignFile) }
        return ItemFile.open(bytes, id: fileID, generations: generations)
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

    /// Writes the keyring durably and returns the bytes written.
    private static func write(_ keyring: Keyring, to path: String) throws(VaultError) -> [UInt8] {
        let bytes = keyring.encoded()
        do { try DurableFile.write(bytes, to: path, mode: 0o600) } catch { throw VaultError(.io(error), file: path) }
        return bytes
    }

    /// Temporary files left by a write that a crash interrupted: those whose writer (the pid in the
    /// name, `NAME.tmp-PID-RANDOM`) is no longer running. A live writer's file is its write in progress.
    private static func removeStaleTemporaryFiles(in folder: String) throws(SystemError) {
        var removed = false
        for name in try Syscall.listDirectory(folder) where name.contains(temporaryMarker) {
            if let pid = writerPID(ofTemporaryFile: name), isRunning(pid) { continue }
            if try Syscall.unlinkIfPresent(folder + "/" + name) { removed = true }
        }
        if removed { try DurableFile.syncFolder(folder) }
    }

    /// The pid in a temporary file's name, `NAME.tmp-PID-RANDOM` (``Platform/DurableFile/write(_:to:mode:)``).
    static func writerPID(ofTemporaryFile name: String) -> Int32? {
        guard let marker = name.range(of: temporaryMarker) else { return nil }
        return Int32(name[marker.upperBound...].prefix { $0 != "-" })
    }

    /// Whether a process with this pid exists (kill with signal 0 checks without sending anything).
    private static func isRunning(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        do throws(SystemError) {
            try Syscall.kill(pid, 0)
            return true
        } catch {
            // EPERM: it exists but belongs to another user.
            return error.errno != ESRCH
        }
    }
}

extension Keyring.Unlock {
    /// The same method and salt: the same key derives the same key encryption key for both.
    func isSame(as other: Keyring.Unlock) -> Bool { method == other.method && salt == other.salt }
}
