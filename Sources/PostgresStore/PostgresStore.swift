import Foundation
import Locking
import Logging
internal import PostgresNIO
import SiteConfig
import Vault

/// Fleet mode's store (SPEC section 11, docs/FLEET.md): the vault's items, its keyring, the sites' leases
/// and the fleet's keepers in one PostgreSQL database that every keeper of the fleet points at.
///
/// The database sees the vault's AEAD items under their keyed-hash ids and nothing in clear: every keeper
/// seals and opens items with ``Vault/VaultKeys`` unlocked by the master key they all share.
///
/// Life cycle: ``run()`` runs the connection pool and the change listener until its task is cancelled
/// (a `Service` in the daemon); while it runs, ``open(createIfMissing:seed:)`` upgrades the schema, unlocks the
/// keyring and registers this keeper; then ``items``, ``leases``, ``sessions(fencedBy:)`` and
/// ``changes()`` work, and ``close()`` releases this keeper's leases and leaves the fleet.
/// ``withRunning(_:key:createIfMissing:environment:logger:_:)`` does all of it around one closure (the
/// CLI's commands).
///
/// Every statement runs on the pool (postgres-nio, on SwiftNIO's event loops) under a deadline, and its
/// failure is a typed ``PostgresStoreError``; a failure to reach the database also marks
/// ``reachability`` unreachable, and any later success marks it reachable.
public final class PostgresStore: Sendable {
    /// Connections of the pool: leases, item writes and reads of one keeper rarely overlap more.
    static let poolSize = 4

    /// The database, for messages (its description hides the password).
    public let url: DatabaseURL
    /// How long leases last, and so how often they are renewed.
    public let settings: PostgresStoreSettings
    /// This keeper's id in the fleet: the holder named in the lease rows it holds.
    public let keeperID: String
    /// Whether the database can be used now, with its changes and one log line per change.
    public let reachability: ReachabilityMonitor

    let client: PostgresClient
    let connection: DatabaseConnection
    let logger: Logger
    let key: MasterKeySource
    let environment: [String: String]
    let sleep: @Sendable (Duration) async throws -> Void
    let feed: ChangeFeed
    let loginRequestFeed = LoginRequestFeed()
    let leaseBook = Locked(LeaseBook())
    /// The write counters of the item rows this keeper has read and written: a row put back is refused.
    let writeCounters = WriteCounters()
    private let state = Locked(OpenState())

    struct OpenState {
        var keys: VaultKeys?
        var storedKeyring = false
        var closed = false
    }

    /// Whether ``open(createIfMissing:seed:)`` stored the keyring (the database had none).
    public var storedKeyring: Bool { state.withLock { $0.storedKeyring } }

    /// A store for the database at `url`; no connection is made until ``run()`` and ``open(createIfMissing:seed:)``.
    /// - Parameters:
    ///   - settings: the lease (and `url`'s source, for messages).
    ///   - key: the vault's master key source, the same on every keeper of the fleet.
    ///   - keeperID: this keeper's id; a new random one by default (each start is a new keeper).
    ///   - now: the wall clock of `unreachable since` (the leases use the database's clock).
    ///   - sleep: how the store waits (deadlines, reconnection backoff); tests may shorten it.
    public init(
        url: DatabaseURL, settings: PostgresStoreSettings, key: MasterKeySource,
        keeperID: String = PostgresStore.newKeeperID(),
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) throws(PostgresStoreError) {
        self.url = url
        self.settings = settings
        self.keeperID = keeperID
        self.key = key
        self.environment = environment
        self.logger = logger
        self.sleep = sleep
        connection = try DatabaseConnection(url, poolSize: Self.poolSize)
        // postgres-nio's own lines (each connection attempt) would repeat what reachability says once.
        var background = logger
        background.logLevel = .critical
        client = PostgresClient(configuration: connection.client, backgroundLogger: background)
        reachability = ReachabilityMonitor(place: url.place, logger: logger, now: now, settle: settings.renewalPeriod)
        feed = ChangeFeed()
    }

    /// This keeper's leases: taking, renewing and releasing them, and the fleet's keepers.
    public var leases: SiteLeases { SiteLeases(store: self) }

    /// `HOST-PID-RANDOM`: readable in the lease and keeper tables, unique per start.
    public static func newKeeperID() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "keeper"
        return "\(host)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Runs the connection pool and the change listener (with its reconnection and the reachability it
    /// reports) until the calling task is cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.client.run() }
            group.addTask { await self.runListener() }
            await group.waitForAll()
        }
    }

    /// Upgrades the schema (one transaction, under an advisory lock), unlocks the keyring (creating it when
    /// the database has none and `createIfMissing`), and registers this keeper in the fleet. Call while
    /// ``run()`` runs; safe to call again after a failure (the database was unreachable).
    ///
    /// - Parameter seed: the keyring to store when the database has none (`store migrate`: the folder's),
    ///   instead of a new one; `key` must be the source that unlocked it.
    /// - Returns: whether this call stored the keyring (a new one, or `seed`'s).
    @discardableResult
    public func open(createIfMissing: Bool, seed: VaultKeys? = nil) async throws(PostgresStoreError) -> Bool {
        try await probe()
        _ = try await perform("upgrading the schema", timeout: .seconds(60)) { [client, logger] in
            try await Schema.migrate(client, logger: logger)
        }
        let (keys, created) = try await loadKeys(createIfMissing: createIfMissing, seed: seed)
        state.withLock { state in
            state.keys = keys
            state.storedKeyring = state.storedKeyring || created
        }
        try await leases.register()
        feed.start(after: try await currentVersion())
        logger.info("store open", metadata: ["database": "\(url.place)", "keeper": "\(keeperID)"])
        return created
    }

    /// Releases this keeper's leases, removes it from the fleet's keepers and ends the change streams.
    /// Failures (the database unreachable) are logged: the leases then end by themselves.
    public func close() async {
        guard !state.withLock({ $0.closed }) else { return }
        do {
            try await leases.leaveFleet()
        } catch {
            logger.warning("leaving the fleet failed; this keeper's leases end by themselves", metadata: ["error": "\(error)"])
        }
        state.withLock { $0.closed = true }
        feed.finish()
        loginRequestFeed.finish()
        reachability.finish()
    }

    /// Runs the store around `body`: the pool and listener in a child task, ``open(createIfMissing:seed:)``,
    /// `body`, ``close()``. For commands that use the database once.
    public static func withRunning<T: Sendable>(
        _ store: PostgresStore, createIfMissing: Bool, seed: VaultKeys? = nil,
        _ body: @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await store.run()
                return nil
            }
            defer { group.cancelAll() }
            do {
                _ = try await store.open(createIfMissing: createIfMissing, seed: seed)
                let result = try await body(store)
                await store.close()
                return result
            } catch {
                await store.close()
                throw error
            }
        }
    }

    /// The items (sessions and secrets) as the vault's ``Vault/ItemStore``.
    public var items: PostgresItemStore { PostgresItemStore(store: self) }

    /// A session store whose writes are fenced by `lease`: each is one statement that succeeds only while
    /// the lease row still names this keeper and the epoch the lease was won under; otherwise it throws
    /// ``Sessions/SessionStoreError/Kind/staleEpoch``.
    public func sessions(fencedBy lease: SiteLease) -> FencedSessionStore {
        FencedSessionStore(store: self, lease: lease)
    }

    /// Every change of a session or a secret made by any keeper from now on (this one included), as the
    /// listener reads it back; see ``ChangeFeed`` for what is guaranteed. Subscribe before reading what
    /// must be current, so nothing falls between the read and the subscription.
    public func changes() -> AsyncStream<StoreRowChange> {
        feed.subscribe()
    }

    /// One direct connection, closed at once: the pool retries a failing connection quietly until a
    /// statement's deadline, while a single attempt says at once why it failed (refused, no such database,
    /// authentication failed).
    private func probe() async throws(PostgresStoreError) {
        var quiet = logger
        quiet.logLevel = .critical
        do {
            // A connection made after the deadline is closed, never dropped open.
            let connection = try await withDeadline(
                url.connectTimeout + .seconds(1), sleep: sleep, discardLate: { try? await $0.close() }
            ) { [configuration = connection.probe, quiet] in
                try await PostgresConnection.connect(configuration: configuration, id: 0, logger: quiet)
            }
            try? await connection.close()
            reachability.succeeded()
        } catch let error as DeadlineExceeded {
            let failure = PostgresStoreError(.unreachable, "connecting to \(url.place): no answer within \(error.limit)")
            reachability.failed(failure.detail)
            throw failure
        } catch {
            let failure = DatabaseFailure.classify(error, doing: "connecting", place: url.place)
            if failure.isUnreachable { reachability.failed(failure.detail) }
            throw failure
        }
    }

    // MARK: Keys

    /// The unlocked keys; fails before ``open(createIfMissing:seed:)``.
    func keys() throws(PostgresStoreError) -> VaultKeys {
        guard let keys = state.withLock({ $0.keys }) else {
            throw PostgresStoreError(.notOpen, "the store is not open")
        }
        return keys
    }

    /// The keyring as the database holds it now, unlocked; called when an item names a key generation
    /// this keeper has not seen.
    func refreshedKeys() async throws(PostgresStoreError) -> VaultKeys {
        let current = try keys()
        guard let bytes = try await readKeyring(), bytes != current.keyringBytes else { return current }
        let keys: VaultKeys
        do {
            keys = try await VaultKeys.unlocking(bytes, key: key, environment: environment, origin: keyringRow)
        } catch {
            throw PostgresStoreError(error)
        }
        state.withLock { $0.keys = keys }
        return keys
    }

    /// Where the keyring lives, for messages.
    var keyringRow: String { "table sessionkeeper_keyring of \(url.place)" }

    private func loadKeys(createIfMissing: Bool, seed: VaultKeys? = nil) async throws(PostgresStoreError) -> (VaultKeys, created: Bool) {
        if let bytes = try await readKeyring() {
            do {
                return (try await VaultKeys.unlocking(bytes, key: key, environment: environment, origin: keyringRow), false)
            } catch {
                throw PostgresStoreError(error)
            }
        }
        if let seed {
            if try await insertKeyring(seed.keyringBytes) { return (seed, true) }
            return try await loadKeys(createIfMissing: false)
        }
        guard createIfMissing else {
            throw PostgresStoreError(
                .vault(.notInitialized),
                "\(url.place) holds no vault keyring yet; run `sessionkeeper vault init` or `sessionkeeper store migrate`")
        }
        let created: VaultKeys
        do {
            created = try await VaultKeys.creating(key: key, environment: environment)
        } catch {
            throw PostgresStoreError(error)
        }
        // Of keepers creating the keyring at once, the first insert wins and the others open its keyring.
        if try await insertKeyring(created.keyringBytes) { return (created, true) }
        return try await loadKeys(createIfMissing: false)
    }

    /// The keyring's bytes, nil when the database has none.
    func readKeyring() async throws(PostgresStoreError) -> [UInt8]? {
        try await perform("reading the keyring") { [client] in
            var found: [UInt8]?
            for try await bytes in try await client.query("SELECT bytes FROM sessionkeeper_keyring").decode(ByteBuffer.self) {
                found = Array(bytes.readableBytesView)
            }
            return found
        }
    }

    /// Inserts a keyring where there is none; false when one exists.
    func insertKeyring(_ bytes: [UInt8]) async throws(PostgresStoreError) -> Bool {
        try await perform("creating the keyring") { [client] in
            var inserted = false
            let rows = try await client.query(
                "INSERT INTO sessionkeeper_keyring (bytes) VALUES (\(ByteBuffer(bytes: bytes))) ON CONFLICT DO NOTHING RETURNING true")
            for try await _ in rows.decode(Bool.self) { inserted = true }
            return inserted
        }
    }

    /// Re-seals the master keys under `newSource` (`vault rekey`), replacing the keyring row only if no
    /// other process changed it meanwhile. Other keepers keep their unlocked keys.
    public func rekey(to newSource: MasterKeySource) async throws(PostgresStoreError) {
        let current = try keys()
        let rekeyed: VaultKeys
        do {
            rekeyed = try await VaultKeys.rekeying(current, to: newSource, environment: environment)
        } catch {
            throw PostgresStoreError(error)
        }
        let replaced = try await perform("replacing the keyring") { [client] in
            var count = 0
            let rows = try await client.query(
                """
                UPDATE sessionkeeper_keyring SET bytes = \(ByteBuffer(bytes: rekeyed.keyringBytes))
                WHERE bytes = \(ByteBuffer(bytes: current.keyringBytes)) RETURNING true
                """)
            for try await _ in rows.decode(Bool.self) { count += 1 }
            return count == 1
        }
        guard replaced else {
            throw PostgresStoreError(.rejected, "another process changed the keyring meanwhile; nothing was changed, run the command again")
        }
        state.withLock { $0.keys = rekeyed }
    }

    /// The highest item version in the database: where a change feed starts.
    func currentVersion() async throws(PostgresStoreError) -> ChangeFeed.Position {
        try await perform("reading the latest version") { [client] in
            var position = ChangeFeed.Position(version: 0, pending: [])
            let rows = try await client.query(
                """
                SELECT greatest((SELECT max(version) FROM sessionkeeper_sessions), (SELECT max(version) FROM sessionkeeper_secrets), 0),
                       (SELECT coalesce(array_agg(x::text::bigint), '{}') FROM pg_snapshot_xip(pg_current_snapshot()) AS x)
                """)
            for try await (version, pending) in rows.decode((Int64, [Int64]).self) {
                position = ChangeFeed.Position(version: version, pending: pending)
            }
            return position
        }
    }

    // MARK: Statements

    /// Runs `body` against the pool under `timeout` (the lease by default), turning every failure into a
    /// ``PostgresStoreError`` and reporting reachability.
    @discardableResult
    func perform<T: Sendable>(
        _ what: String, timeout: Duration? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws(PostgresStoreError) -> T {
        let limit = timeout ?? settings.lease
        do {
            let value = try await withDeadline(limit, sleep: sleep, body)
            reachability.succeeded()
            return value
        } catch let error as DeadlineExceeded {
            let silence = "\(what) on \(url.place): no answer within \(error.limit)"
            // Known unreachable already: the reason found before (refused, authentication failed) says more.
            if case let .unreachable(_, reason) = reachability.current {
                reachability.failed(silence, keepingReason: true)
                throw PostgresStoreError(.unreachable, "\(silence) (\(reason))")
            }
            reachability.failed(silence)
            throw PostgresStoreError(.unreachable, silence)
        } catch {
            let failure = DatabaseFailure.classify(error, doing: what, place: url.place)
            // A refused statement was answered: the database is there.
            if failure.isUnreachable { reachability.failed(failure.detail) } else { reachability.succeeded() }
            throw failure
        }
    }
}

extension PostgresClient {
    /// Runs a statement whose rows, if any, are not needed, reading them to the end so that the connection
    /// goes back to the pool at once.
    func exhaust(_ query: PostgresQuery) async throws {
        for try await _ in try await self.query(query) {}
    }
}
