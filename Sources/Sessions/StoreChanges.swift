/// Something another process changed in the store the daemon keeps its sessions and secrets in.
public enum StoreChange: Sendable, Hashable {
    /// A session was stored for the site (`sessionkeeper login`, `import`, or the daemon's own write).
    case session(site: String)
    /// The secret was set or removed (`sessionkeeper secret set`, `secret rm`).
    case secret(name: String)
}

/// Tells the daemon what changes in its store while it runs, so that a secret set or a session stored by another
/// process takes effect at once rather than at the site's next check. The vault's is ``VaultChangeFeed``
/// (inotify on its folder); a store shared by several hosts reports what its own change notices say.
public protocol StoreChangeFeed: Sendable {
    /// Batches of changes as they happen, until ``stop()``.
    var changes: AsyncStream<[StoreChange]> { get }
    /// The sites and secrets the daemon keeps now. A store whose notices do not name what changed (the vault's
    /// file names are keyed hashes of each item's kind and name) reports changes to these only.
    func follow(sites: Set<String>, secrets: Set<String>)
    /// Stops reporting and ends ``changes``.
    func stop()
}
