import Foundation
internal import PostgresNIO
import Sessions
import Vault

/// A site's sessions as the keeper holding its lease writes them (SPEC section 11): every save or removal
/// is ONE statement that writes the session row only if the site's lease row still names this keeper and
/// the epoch ``lease`` was won under, holding a share lock on the lease row meanwhile, so no takeover can
/// commit between the check and the write. A refused write throws ``Sessions/SessionStoreError/Kind/staleEpoch``:
/// the caller logs it and drops the write; the session of the keeper that took the site over stands.
///
/// Reads are not fenced. Built by ``PostgresStore/sessions(fencedBy:)``; a run passes it to
/// ``Sessions/SiteLogin/storing(in:)``.
public struct FencedSessionStore: SessionStore {
    let store: PostgresStore
    /// The lease the writes are conditioned on.
    public let lease: SiteLease

    public func load(site: String) async throws(SessionStoreError) -> SessionRecord? {
        try await VaultSessionStore(items: store.items).load(site: site)
    }

    public func save(_ record: SessionRecord, site: String) async throws(SessionStoreError) {
        let bytes = try VaultSessionStore.bytes(of: record, site: site)
        try await write(site: site, value: bytes, present: true)
    }

    /// Leaves a tombstone, fenced like a save; false when no session was stored.
    @discardableResult
    public func remove(site: String) async throws(SessionStoreError) -> Bool {
        try await write(site: site, value: [], present: false)
    }

    /// One fenced statement; returns whether a row changed.
    @discardableResult
    private func write(site: String, value: [UInt8], present: Bool) async throws(SessionStoreError) -> Bool {
        guard site == lease.site else {
            throw SessionStoreError(kind: .backend, site: site, detail: "the store is fenced by the lease of site '\(lease.site)'")
        }
        let item = VaultSessionStore.item(for: site)
        let sealed: [UInt8]
        let keys: VaultKeys
        let counter: UInt64
        do {
            keys = try store.keys()
            counter = try await store.items.nextCounter(item, id: keys.itemID(of: item))
            sealed = try keys.seal(value, for: item, counter: counter)
        } catch let error as PostgresStoreError {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: "\(error)")
        }
        // The lease id is the session item's id under the keys the lease was won with.
        let id = ByteBuffer(bytes: lease.siteID)
        guard keys.itemID(of: item) == lease.siteID else {
            throw SessionStoreError(kind: .staleEpoch, site: site, detail: "the vault's keys changed since the lease was won")
        }
        let bytes = ByteBuffer(bytes: sealed)
        let me = store.keeperID
        let epoch = lease.epoch
        let outcome: (changed: Bool, current: Int64?, holder: String?)
        do {
            outcome = try await store.perform("storing the session of site '\(site)'") { [client = store.client] in
                let rows: PostgresRowSequence
                if present {
                    rows = try await client.query(
                        """
                        WITH fence AS (SELECT epoch, holder FROM sessionkeeper_leases WHERE site_id = \(id) FOR SHARE),
                        written AS (
                            INSERT INTO sessionkeeper_sessions (id, item, present, epoch)
                            SELECT \(id), \(bytes), true, \(epoch) FROM fence WHERE fence.holder = \(me) AND fence.epoch = \(epoch)
                            ON CONFLICT (id) DO UPDATE SET item = EXCLUDED.item, present = true, epoch = EXCLUDED.epoch
                            RETURNING true AS changed)
                        SELECT (SELECT count(*) FROM written) > 0, (SELECT epoch FROM fence), (SELECT holder FROM fence)
                        """)
                } else {
                    rows = try await client.query(
                        """
                        WITH fence AS (SELECT epoch, holder FROM sessionkeeper_leases WHERE site_id = \(id) FOR SHARE),
                        written AS (
                            UPDATE sessionkeeper_sessions SET item = \(bytes), present = false, epoch = \(epoch)
                            WHERE id = \(id) AND present
                              AND EXISTS (SELECT 1 FROM fence WHERE fence.holder = \(me) AND fence.epoch = \(epoch))
                            RETURNING true AS changed)
                        SELECT (SELECT count(*) FROM written) > 0, (SELECT epoch FROM fence), (SELECT holder FROM fence)
                        """)
                }
                var result: (Bool, Int64?, String?) = (false, nil, nil)
                for try await row in rows.decode((Bool, Int64?, String?).self) { result = row }
                return (changed: result.0, current: result.1, holder: result.2)
            }
        } catch {
            throw SessionStoreError(kind: .backend, site: site, detail: error.description)
        }
        guard outcome.holder == me, outcome.current == epoch else {
            let now = outcome.current.map { "epoch \($0)" + (outcome.holder == me ? "" : " of another keeper") } ?? "gone"
            throw SessionStoreError(
                kind: .staleEpoch, site: site,
                detail: "write refused for a stale lease epoch (won under epoch \(epoch), the lease is now at \(now)); dropped")
        }
        if outcome.changed { store.writeCounters.written(counter, id: lease.siteID) }
        return outcome.changed
    }
}
