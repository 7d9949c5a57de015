import Foundation
import Platform

// The keyring file: the keys as last read, re-read when another process changed them, and its lock.
extension Vault {
    // MARK: Internals

    /// The keys as this process last read them; fails once the vault is closed.
    func currentKeys() throws(VaultError) -> Keys {
        try state.withLock { (state) throws(VaultError) -> Keys in
            guard !state.isClosed else { throw VaultError(.closed, file: stateDirectory) }
            return try Keys(state, keyringPath: keyringPath)
        }
    }

    /// Re-reads the keyring file and takes in what another process changed (a rotation's generations,
    /// a rekey). After a rekey elsewhere this process no longer holds the key that opens the keyring,
    /// but the master keys it has are unchanged and stay usable; a generation it has not seen is then
    /// out of reach, and so is any keyring change (`requiringOwnKey`).
    func refreshedKeys(requiringOwnKey: Bool = false) throws(VaultError) -> Keys {
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
    func commit(_ keyring: Keyring, generations: [KeyGeneration], newKey: (ProtectedKey, MasterKeySource)?) throws(VaultError) {
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

    func withKeyringLock<T>(_ mode: FileLock.Mode, _ body: () throws(VaultError) -> T) throws(VaultError) -> T {
        let lock = try Self.acquireKeyringLock(keyringLockPath, mode, lockTimeout)
        defer { lock.release() }
        return try body()
    }

    static func acquireKeyringLock(_ path: String, _ mode: FileLock.Mode, _ timeout: Duration) throws(VaultError) -> FileLock {
        do {
            return try FileLock.acquire(path, mode: mode, waitingUpTo: timeout)
        } catch {
            switch error {
            case let .held(_, holderPID): throw VaultError(.keyringBusy(holderPID: holderPID, waited: timeout), file: path)
            case let .system(systemError): throw VaultError(.io(systemError), file: path)
            }
        }
    }

}

extension Keyring.Unlock {
    /// The same method and salt: the same key derives the same key encryption key for both.
    func isSame(as other: Keyring.Unlock) -> Bool { method == other.method && salt == other.salt }
}
