import Crypto
import Foundation
import Platform

/// What ``Vault/rotate()`` did.
public struct RotationSummary: Sendable, Hashable {
    /// The key generation every item is now encrypted under.
    public var keyID: UInt32
    /// Items re-encrypted by this run (an interrupted run's items are not counted again).
    public var reencrypted: Int
}

// Key management: a new key for the master keys (rekey), and every item under a new master key (rotate).
extension Vault {
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
    func move(_ name: String, to target: KeyGeneration, keys: Keys) throws(VaultError) -> MoveOutcome {
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

}
