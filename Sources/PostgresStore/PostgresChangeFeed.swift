import Locking
import Sessions

/// The fleet database's changes as the daemon follows them (SPEC section 11): the store's change feed
/// (LISTEN/NOTIFY with the version read back, ``PostgresStore/changes()``), narrowed to the sites and secrets the
/// daemon keeps. A session another keeper stored is served at once; a changed secret wakes a site that waits for
/// a person.
public final class PostgresChangeFeed: StoreChangeFeed {
    public let changes: AsyncStream<[StoreChange]>
    private let followed = Locked<(sites: Set<String>, secrets: Set<String>)>(([], []))
    private let reader: Task<Void, Never>

    /// Subscribes to `store`'s changes at once, so nothing written after this falls between a read and the
    /// subscription; nothing is reported before ``follow(sites:secrets:)``.
    public init(store: PostgresStore) {
        let rows = store.changes()
        let (changes, continuation) = AsyncStream.makeStream(of: [StoreChange].self, bufferingPolicy: .unbounded)
        self.changes = changes
        reader = Task { [followed] in
            for await row in rows {
                let wanted = followed.withLock { $0 }
                switch row.subject {
                case .site(let name) where wanted.sites.contains(name): continuation.yield([.session(site: name)])
                case .secret(let name) where wanted.secrets.contains(name): continuation.yield([.secret(name: name)])
                case .site, .secret: continue
                }
            }
            continuation.finish()
        }
    }

    public func follow(sites: Set<String>, secrets: Set<String>) {
        followed.withLock { $0 = (sites, secrets) }
    }

    public func stop() {
        reader.cancel()
    }
}
