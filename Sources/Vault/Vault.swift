import Crypto
import Foundation
import Locking
import Platform
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
    let keyringPath: String
    let keyringLockPath: String
    let lockTimeout: Duration
    let state: Locked<State>

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

    init(stateDirectory: String, lockTimeout: Duration, state: State) {
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
    static func readKeyringIfPresent(_ path: String) throws(VaultError) -> [UInt8]? {
        do throws(SystemError) {
            return try DurableFile.read(path)
        } catch {
            if error.errno == ENOENT { return nil }
            throw VaultError(.io(error), file: path)
        }
    }

    /// Opens an existing keyring with `key` (its material obtained here unless given).
    static func unlock(
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
}
