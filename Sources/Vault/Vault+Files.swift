import Foundation
import Platform

// The folder's files: item paths and names, atomic writes, the scan of every item, stale temporary files.
extension Vault {
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
    func store(_ value: [UInt8], for item: ItemReference, keys: Keys) throws(VaultError) {
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

    func writeItem(_ value: [UInt8], for item: ItemReference, generation: KeyGeneration, path: String) throws(VaultError) {
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
    func scanAgreeingWithKeyring(keepingValuesOf kept: ItemKind? = nil) throws(VaultError) -> Scan {
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

    func scan(keys: Keys, keepingValuesOf kept: ItemKind?) throws(VaultError) -> Scan {
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

    static func checkName(_ item: ItemReference) throws(VaultError) {
        guard ItemFile.isValidName(item.name) else { throw VaultError(.invalidName, item: item) }
    }

    /// Writes the keyring durably and returns the bytes written.
    static func write(_ keyring: Keyring, to path: String) throws(VaultError) -> [UInt8] {
        let bytes = keyring.encoded()
        do { try DurableFile.write(bytes, to: path, mode: 0o600) } catch { throw VaultError(.io(error), file: path) }
        return bytes
    }

    /// Temporary files left by a write that a crash interrupted: those whose writer (the pid in the
    /// name, `NAME.tmp-PID-RANDOM`) is no longer running. A live writer's file is its write in progress.
    static func removeStaleTemporaryFiles(in folder: String) throws(SystemError) {
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
    static func isRunning(_ pid: Int32) -> Bool {
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
