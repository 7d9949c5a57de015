import Foundation
import Vault

/// Sessions in the encrypted vault (SPEC section 6): one `.siteState` item per site, named after it,
/// holding the ``SessionRecord``'s JSON.
public struct VaultSessionStore: SessionStore {
    public let vault: Vault

    public init(vault: Vault) {
        self.vault = vault
    }

    /// The vault item that holds `site`'s session.
    public static func item(for site: String) -> ItemReference { ItemReference(.siteState, site) }

    public func load(site: String) async throws(SessionStoreError) -> SessionRecord? {
        let bytes: [UInt8]?
        do {
            bytes = try vault.value(of: Self.item(for: site))
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
        guard let bytes else { return nil }
        do {
            return try SessionRecord.decode(bytes)
        } catch {
            throw SessionStoreError(kind: .unreadableRecord, site: site, detail: error.reason)
        }
    }

    public func save(_ record: SessionRecord, site: String) async throws(SessionStoreError) {
        let bytes: [UInt8]
        do {
            bytes = try record.encoded()
        } catch {
            throw SessionStoreError(kind: .unreadableRecord, site: site, detail: error.reason)
        }
        do {
            try vault.set(bytes, for: Self.item(for: site))
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
    }

    @discardableResult
    public func remove(site: String) async throws(SessionStoreError) -> Bool {
        do {
            return try vault.remove(Self.item(for: site))
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
    }
}
