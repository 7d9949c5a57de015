import Foundation

/// Where sessions are kept between logins and across restarts: the one seam between "log in one site"
/// (and the daemon) and a storage backend.
///
/// Today the backend is the encrypted vault of one host (``VaultSessionStore``). Keepers on several
/// hosts will later share one store on PostgreSQL; that backend is another type conforming to this
/// protocol, so nothing above it changes. Implementations are safe to call from any task, and a
/// ``load(site:)`` after another process's ``save(_:site:)`` returns that newer record.
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
        }
    }
}
