import Foundation
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

// Reading and writing items: each in its own file, named by its keyed hash.
extension Vault {
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

    func lookUp(_ item: ItemReference, keys: Keys) throws(VaultError) -> Lookup {
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

}
