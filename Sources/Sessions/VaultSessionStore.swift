import Foundation
import Vault

/// Sessions as vault items (SPEC section 6): one `.siteState` item per site, named after it, holding the
/// ``SessionRecord``'s JSON, in whichever ``ItemStore`` holds the vault: the vault folder, or a fleet's
/// database for reads and for the writes of commands that hold no lease (a keeper's own writes in fleet
/// mode go through the fenced store of the PostgresStore module).
public struct VaultSessionStore: SessionStore {
    /// Where the items live.
    public let items: any ItemStore

    public init(items: any ItemStore) {
        self.items = items
    }

    /// Sessions in the vault folder, through the vault's I/O threads.
    public init(vault: Vault) {
        self.init(items: vault.background)
    }

    /// The vault item that holds `site`'s session.
    public static func item(for site: String) -> ItemReference { ItemReference(.siteState, site) }

    public func load(site: String) async throws(SessionStoreError) -> SessionRecord? {
        let bytes: [UInt8]?
        do {
            bytes = try await items.value(of: Self.item(for: site))
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
        guard let bytes else { return nil }
        return try Self.record(from: bytes, site: site)
    }

    public func save(_ record: SessionRecord, site: String) async throws(SessionStoreError) {
        let bytes = try Self.bytes(of: record, site: site)
        do {
            try await items.set(bytes, for: Self.item(for: site))
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
    }

    @discardableResult
    public func remove(site: String) async throws(SessionStoreError) -> Bool {
        do {
            return try await items.remove(Self.item(for: site))
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
    }

    /// A stored item's bytes as a record; an error names the site, never a cookie value.
    public static func record(from bytes: [UInt8], site: String) throws(SessionStoreError) -> SessionRecord {
        do {
            return try SessionRecord.decode(bytes)
        } catch {
            throw SessionStoreError(kind: .unreadableRecord, site: site, detail: error.reason)
        }
    }

    /// A record as the bytes its item holds.
    public static func bytes(of record: SessionRecord, site: String) throws(SessionStoreError) -> [UInt8] {
        do {
            return try record.encoded()
        } catch {
            throw SessionStoreError(kind: .unreadableRecord, site: site, detail: error.reason)
        }
    }
}
