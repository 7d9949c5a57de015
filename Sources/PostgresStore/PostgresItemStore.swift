import Foundation
internal import PostgresNIO
import Vault

/// The vault's items in the fleet's database, as an ``Vault/ItemStore``: sessions in
/// `sessionkeeper_sessions`, secrets in `sessionkeeper_secrets`, each row keyed by the item's keyed-hash
/// id and holding the sealed item, the same bytes a vault file holds. A removal leaves a tombstone (the
/// item sealed with an empty value, `present` false) so that listeners learn which item went.
///
/// Every write seals a write counter above every one seen for the item (``WriteCounters``), and every read
/// refuses a row whose counter is below one this keeper has seen (`VaultError.Reason.rolledBack`).
///
/// Writes here are not fenced: they are the CLI's (`secret set`, `store migrate`, `import`). A keeper's
/// session writes go through ``FencedSessionStore``.
public struct PostgresItemStore: ItemStore {
    let store: PostgresStore

    public var location: String { store.url.place }

    static func table(_ kind: ItemKind) -> String {
        switch kind {
        case .siteState: "sessionkeeper_sessions"
        case .credential: "sessionkeeper_secrets"
        }
    }

    /// Where `kind`'s items are, for messages.
    func place(_ kind: ItemKind) -> String { "table \(Self.table(kind)) of \(store.url.place)" }

    public func value(of item: ItemReference) async throws(VaultError) -> [UInt8]? {
        guard ItemReference.isValidName(item.name) else { throw VaultError(.invalidName, item: item) }
        var keys = try vaultKeys(item)
        for attempt in 1...2 {
            let ids = keys.itemIDs(of: item)
            let rows = try await rows(item.kind, ids: ids, item: item)
            // Newest generation first, as the vault folder reads.
            guard let row = ids.lazy.compactMap({ id in rows.first { $0.0 == id } }).first else { return nil }
            let (id, bytes, present) = row
            guard present else { return nil }
            switch keys.open(bytes, id: id) {
            case let .success(opened):
                guard opened.item == item else { throw VaultError(.tampered, item: item, file: place(item.kind)) }
                if let rolledBack = store.writeCounters.check(opened.counter, id: id) {
                    throw VaultError(rolledBack, item: item, file: place(item.kind))
                }
                return opened.value
            case let .failure(.unknownKeyID(generation)) where attempt == 1:
                keys = try await refreshed(item, unknown: generation)
            case let .failure(reason):
                throw VaultError(reason, item: item, file: place(item.kind))
            }
        }
        return nil
    }

    public func set(_ value: [UInt8], for item: ItemReference) async throws(VaultError) {
        let keys = try vaultKeys(item)
        let id = keys.itemID(of: item)
        let counter = try await nextCounter(item, id: id)
        let sealed = try keys.seal(value, for: item, counter: counter)
        try await write(item, id: id, bytes: sealed, present: true)
        store.writeCounters.written(counter, id: id)
    }

    @discardableResult
    public func remove(_ item: ItemReference) async throws(VaultError) -> Bool {
        let keys = try vaultKeys(item)
        let counter = try await nextCounter(item, id: keys.itemID(of: item))
        let tombstone = try keys.seal([], for: item, counter: counter)
        let table = Self.table(item.kind)
        let id = ByteBuffer(bytes: keys.itemID(of: item))
        let bytes = ByteBuffer(bytes: tombstone)
        do {
            let removed = try await store.perform("removing \(item)") { [client = store.client] in
                var removed = false
                let rows = try await client.query(
                    "UPDATE \(unescaped: table) SET item = \(bytes), present = false WHERE id = \(id) AND present RETURNING true")
                for try await _ in rows.decode(Bool.self) { removed = true }
                return removed
            }
            if removed { store.writeCounters.written(counter, id: keys.itemID(of: item)) }
            return removed
        } catch {
            throw VaultError(error.vaultError.reason, item: item, file: place(item.kind))
        }
    }

    public func list() async throws(VaultError) -> VaultListing {
        var items: [ItemReference] = []
        var problems: [VaultError] = []
        for kind in ItemKind.allCases {
            let found = try await opened(kind)
            items += found.values.keys.map { ItemReference(kind, $0) }
            problems += found.problems
        }
        return VaultListing(items: items.sorted(), problems: problems)
    }

    public func contents(of kind: ItemKind) async throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError]) {
        try await opened(kind)
    }

    public func names(of kind: ItemKind) async throws(VaultError) -> (names: [String], problems: [VaultError]) {
        let found = try await opened(kind)
        return (found.values.keys.sorted(), found.problems)
    }

    // MARK: Rows

    /// Every present item of `kind`, opened; a row that cannot be opened is a problem, not a failure.
    func opened(_ kind: ItemKind) async throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError]) {
        let rows = try await allRows(kind)
        var keys = try vaultKeys(nil)
        var results = rows.map { keys.open($0.bytes, id: $0.id) }
        // An item under a generation this keeper has not seen: another process rotated; read the keyring again.
        if results.contains(where: { if case .failure(.unknownKeyID) = $0 { true } else { false } }) {
            keys = try await refreshed(nil, unknown: nil)
            results = rows.map { keys.open($0.bytes, id: $0.id) }
        }
        var values: [String: [UInt8]] = [:]
        var problems: [VaultError] = []
        for (row, result) in zip(rows, results) {
            switch result {
            case let .success(opened) where opened.item.kind == kind:
                if let rolledBack = store.writeCounters.check(opened.counter, id: row.id) {
                    problems.append(VaultError(rolledBack, item: opened.item, file: place(kind)))
                    continue
                }
                values[opened.item.name] = opened.value
            case .success:
                problems.append(VaultError(.tampered, file: "\(place(kind)), id \(hex(row.id))"))
            case let .failure(reason):
                problems.append(VaultError(reason, file: "\(place(kind)), id \(hex(row.id))"))
            }
        }
        return (values, problems)
    }

    /// The rows of `kind` that hold items (tombstones left out), sealed.
    func allRows(_ kind: ItemKind) async throws(VaultError) -> [(id: [UInt8], bytes: [UInt8])] {
        let table = Self.table(kind)
        do {
            return try await store.perform("reading \(table)") { [client = store.client] in
                var found: [(id: [UInt8], bytes: [UInt8])] = []
                let rows = try await client.query("SELECT id, item FROM \(unescaped: table) WHERE present ORDER BY id")
                for try await (id, item) in rows.decode((ByteBuffer, ByteBuffer).self) {
                    found.append((Array(id.readableBytesView), Array(item.readableBytesView)))
                }
                return found
            }
        } catch {
            throw VaultError(error.vaultError.reason, file: place(kind))
        }
    }

    private func rows(_ kind: ItemKind, ids: [[UInt8]], item: ItemReference) async throws(VaultError) -> [([UInt8], [UInt8], Bool)] {
        let table = Self.table(kind)
        let buffers = ids.map { ByteBuffer(bytes: $0) }
        do {
            return try await store.perform("reading \(item)") { [client = store.client] in
                var found: [([UInt8], [UInt8], Bool)] = []
                let rows = try await client.query("SELECT id, item, present FROM \(unescaped: table) WHERE id = ANY(\(buffers)::bytea[])")
                for try await (id, bytes, present) in rows.decode((ByteBuffer, ByteBuffer, Bool).self) {
                    found.append((Array(id.readableBytesView), Array(bytes.readableBytesView), present))
                }
                return found
            }
        } catch {
            throw VaultError(error.vaultError.reason, item: item, file: place(kind))
        }
    }

    /// The write counter the next write of `item` (stored under `id`) seals: above every one this keeper has
    /// seen of it and the one its row holds now.
    func nextCounter(_ item: ItemReference, id: [UInt8]) async throws(VaultError) -> UInt64 {
        let stored = try await rows(item.kind, ids: [id], item: item).first { $0.0 == id }?.1
        return store.writeCounters.next(for: id, stored: stored)
    }

    /// Upserts one sealed item (no fence).
    func write(_ item: ItemReference, id: [UInt8], bytes: [UInt8], present: Bool) async throws(VaultError) {
        let table = Self.table(item.kind)
        let idBuffer = ByteBuffer(bytes: id)
        let itemBuffer = ByteBuffer(bytes: bytes)
        do {
            try await store.perform("storing \(item)") { [client = store.client] in
                try await client.exhaust(
                    """
                    INSERT INTO \(unescaped: table) (id, item, present) VALUES (\(idBuffer), \(itemBuffer), \(present))
                    ON CONFLICT (id) DO UPDATE SET item = EXCLUDED.item, present = EXCLUDED.present
                    """)
            }
        } catch {
            throw VaultError(error.vaultError.reason, item: item, file: place(item.kind))
        }
    }

    private func vaultKeys(_ item: ItemReference?) throws(VaultError) -> VaultKeys {
        do {
            return try store.keys()
        } catch {
            throw VaultError(error.vaultError.reason, item: item, file: store.keyringRow)
        }
    }

    private func refreshed(_ item: ItemReference?, unknown: UInt32?) async throws(VaultError) -> VaultKeys {
        do {
            return try await store.refreshedKeys()
        } catch {
            throw VaultError(error.vaultError.reason, item: item, file: store.keyringRow)
        }
    }

    private func hex(_ id: [UInt8]) -> String { SiteLeases.idKey(id) }
}
