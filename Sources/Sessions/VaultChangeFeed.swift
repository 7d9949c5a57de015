import Locking
import Platform
import Vault

/// The vault's changes (SPEC section 6), seen as the kernel reports them: a ``Platform/DirectoryWatcher`` on the
/// vault's folder, whose reports of item files are mapped back to the sites and secrets the daemon follows.
///
/// An item's file name is a keyed hash of its kind and name, so a name only the key's holder can compute: the feed
/// computes the names of what it follows (``Vault/fileNames(of:)``), under every key generation, and again when the
/// keyring changes (a rotation adds a generation, under which items get new names). Other files (other items,
/// temporary files of a write in progress) are not reported.
public final class VaultChangeFeed: StoreChangeFeed {
    public let changes: AsyncStream<[StoreChange]>
    private let vault: Vault
    private let watcher: DirectoryWatcher
    private let continuation: AsyncStream<[StoreChange]>.Continuation
    private let state = Locked(State())

    private struct State {
        var followed: Set<ItemReference> = []
        /// File name to the followed item it holds.
        var items: [String: ItemReference] = [:]
    }

    /// Starts watching `vault`'s folder; nothing is reported before ``follow(sites:secrets:)``.
    public init(vault: Vault) throws(SystemError) {
        self.vault = vault
        watcher = try DirectoryWatcher(folder: vault.folder)
        (changes, continuation) = AsyncStream.makeStream(of: [StoreChange].self, bufferingPolicy: .unbounded)
        Task { [watcher, weak self] in
            for await names in watcher.changes {
                guard let self else { break }
                let batch = self.storeChanges(named: names)
                if !batch.isEmpty { self.continuation.yield(batch) }
            }
            self?.continuation.finish()
        }
    }

    public func follow(sites: Set<String>, secrets: Set<String>) {
        let followed = Set(sites.map { VaultSessionStore.item(for: $0) } + secrets.map { ItemReference(.credential, $0) })
        let items = (try? vault.fileNames(of: followed)) ?? [:]
        state.withLock { state in
            state.followed = followed
            state.items = items
        }
    }

    public func stop() {
        watcher.stop()
    }

    deinit { watcher.stop() }

    /// What the changed file names hold, once each, in the order first seen.
    private func storeChanges(named names: [String]) -> [StoreChange] {
        var items = state.withLock { $0.items }
        if names.contains(where: Vault.isKeyringFileName) {
            let followed = state.withLock { $0.followed }
            if let renamed = try? vault.fileNames(of: followed) {
                items = renamed
                state.withLock { $0.items = renamed }
            }
        }
        var seen: Set<StoreChange> = []
        var batch: [StoreChange] = []
        for name in names {
            guard let item = items[name] else { continue }
            let change: StoreChange = item.kind == .credential ? .secret(name: item.name) : .session(site: item.name)
            if seen.insert(change).inserted { batch.append(change) }
        }
        return batch
    }
}
