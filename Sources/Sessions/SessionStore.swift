import Foundation

/// Where sessions are kept between logins and across restarts: the one seam between "log in one site"
/// (and the daemon) and a storage backend.
///
/// Two backends hold sessions as vault items: ``VaultSessionStore`` over any ``Vault/ItemStore`` (the vault
/// folder of one host, or a fleet's PostgreSQL database), and the PostgresStore module's fenced store, whose
/// writes are statements conditioned on the lease epoch a keeper won the site under (SPEC section 11).
/// Implementations are safe to call from any task, and a ``load(site:)`` after another process's
/// ``save(_:site:)`` returns that newer record.
public protocol SessionStore: Sendable {
    /// The site's stored session, nil when none is stored.
    func load(site: String) async throws(SessionStoreError) -> SessionRecord?
    /// Replaces the site's stored session, atomically: a reader sees the old record or the new one.
    func save(_ record: SessionRecord, site: String) async throws(SessionStoreError)
    /// Forgets the site's session (its file was removed); returns false when none was stored.
    @discardableResult
    func remove(site: String) async throws(SessionStoreError) -> Bool
}

/// Why a session could not be loaded, saved or removed. Names the site and the backend's item, never a
/// cookie value.
public struct SessionStoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The backend failed (the vault's key, a file, the disk): `detail` says what.
        case backend
        /// The stored bytes are not a session record this version can read.
        case unreadableRecord
        /// Fleet mode: the write was refused because the site's lease was taken over since this keeper won
        /// it (or expired and was taken again); the write is dropped, the new holder's session stands.
        case staleEpoch
    }

    public var kind: Kind
    public var site: String
    public var detail: String

    public init(kind: Kind, site: String, detail: String) {
        self.kind = kind
        self.site = site
        self.detail = detail
    }

    public var description: String {
        switch kind {
        case .backend: "site '\(site)': the stored session is not available: \(detail)"
        case .unreadableRecord: "site '\(site)': \(detail)"
        case .staleEpoch: "site '\(site)': the session was not stored: \(detail)"
        }
    }
}
