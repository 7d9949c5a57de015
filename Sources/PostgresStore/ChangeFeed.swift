import Foundation
import Locking
import Logging
internal import PostgresNIO
import Sessions
import Vault

/// A session or a secret that changed in the fleet's database.
public struct StoreRowChange: Sendable {
    public enum Subject: Sendable, Hashable {
        /// A site's session (its name).
        case site(String)
        /// A secret (its name).
        case secret(String)
    }

    public var subject: Subject
    /// The row's version (one sequence for every item: later writes have higher versions).
    public var version: Int64
    /// The item was removed (its row is a tombstone).
    public var removed: Bool
    /// For a site, the session as stored: nil when removed, or when the record cannot be read (its
    /// ``problem`` says why).
    public var session: SessionRecord?
    /// Why the session's record could not be read, when it could not.
    public var problem: String?
}

/// The delays between reconnection attempts: doubling from `initial` up to `maximum`, back to `initial`
/// after a success. Pure, so its sequence is tested without waiting.
struct Backoff: Sendable {
    let initial: Duration
    let maximum: Duration
    private var next: Duration

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
        next = initial
    }

    /// The delay before the next attempt.
    mutating func delay() -> Duration {
        let delay = next
        next = min(next * 2, maximum)
        return delay
    }

    mutating func reset() { next = initial }
}

/// Propagation of changes between keepers (SPEC section 11, docs/FLEET.md "Propagation").
///
/// Every insert or update of an item row gets the next value of one sequence (`version`) and the id of
/// the writing transaction (`written_by`), and announces itself with NOTIFY. The listener holds a
/// dedicated connection that LISTENs; at each notification, and at each (re)connection, it reads back
/// every row whose version is newer than the last it saw. Versions are taken when a statement runs but
/// become visible when its transaction commits, so a row with a lower version may appear after one with a
/// higher version was read: each read therefore also notes the transactions still in progress at that
/// moment (`pg_snapshot_xip`), and the next read takes their rows too, whatever their version. A
/// notification lost while the connection was down costs nothing: the read after reconnecting finds every
/// row written meanwhile.
final class ChangeFeed: Sendable {
    /// Where the next read starts: the highest version read, and the transactions that were in progress.
    struct Position: Sendable, Hashable {
        var version: Int64
        var pending: [Int64]
    }

    private struct State {
        var position: Position?
        var subscribers: [UUID: AsyncStream<StoreRowChange>.Continuation] = [:]
        var startWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
        var reads = 0
        var connections = 0
    }

    private let state = Locked(State())

    /// A new stream of every change read from now on.
    func subscribe() -> AsyncStream<StoreRowChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreRowChange.self, bufferingPolicy: .unbounded)
        let id = UUID()
        let finished = state.withLock { state -> Bool in
            if !state.finished { state.subscribers[id] = continuation }
            return state.finished
        }
        if finished { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sets where reading starts (once: a second open keeps the first position) and lets the listener go.
    func start(after position: Position) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.position == nil { state.position = position }
            defer { state.startWaiters = [] }
            return state.startWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``start(after:)`` was called, or at once when the task is cancelled.
    func waitUntilStarted() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let started = state.withLock { state -> Bool in
                    if state.position != nil || state.finished { return true }
                    state.startWaiters.append(continuation)
                    return false
                }
                if started { continuation.resume() }
            }
        } onCancel: {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.finished = state.finished || state.position == nil
                defer { state.startWaiters = [] }
                return state.startWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    var position: Position? { state.withLock { $0.position } }

    /// How many reads and connections the listener made (for tests and status).
    var counters: (reads: Int, connections: Int) { state.withLock { ($0.reads, $0.connections) } }

    func connected() { state.withLock { $0.connections += 1 } }

    /// Delivers what a read found and moves the position.
    func deliver(_ changes: [StoreRowChange], newPosition: Position) {
        let subscribers = state.withLock { state -> [AsyncStream<StoreRowChange>.Continuation] in
            state.position = newPosition
            state.reads += 1
            return Array(state.subscribers.values)
        }
        for change in changes {
            for subscriber in subscribers { subscriber.yield(change) }
        }
    }

    /// Ends every subscriber's stream.
    func finish() {
        let (subscribers, waiters) = state.withLock { state -> ([AsyncStream<StoreRowChange>.Continuation], [CheckedContinuation<Void, Never>]) in
            state.finished = true
            defer {
                state.subscribers = [:]
                state.startWaiters = []
            }
            return (Array(state.subscribers.values), state.startWaiters)
        }
        for subscriber in subscribers { subscriber.finish() }
        for waiter in waiters { waiter.resume() }
    }
}

/// The listener's connection ended (the server closed it, or a ping failed); the loop reconnects.
struct ListenerConnectionEnded: Error {}

extension PostgresStore {
    /// The listener: connect, LISTEN, read back, then read again at each notification and ping every
    /// renewal period; on any failure, report the store unreachable, wait (``Backoff``) and reconnect.
    func runListener() async {
        await feed.waitUntilStarted()
        var backoff = Backoff(initial: .milliseconds(100), maximum: min(settings.renewalPeriod, .seconds(5)))
        var quiet = logger
        quiet.logLevel = .critical
        var attempt = 0
        while !Task.isCancelled, feed.position != nil {
            attempt += 1
            do {
                // A connection made after the deadline is closed, never dropped open.
                let connection = try await withDeadline(
                    url.connectTimeout + .seconds(1), sleep: sleep, discardLate: { try? await $0.close() }
                ) { [configuration = self.connection.listener, attempt, quiet] in
                    try await PostgresConnection.connect(configuration: configuration, id: attempt, logger: quiet)
                }
                feed.connected()
                do {
                    try await listen(on: connection, resetting: &backoff)
                    try? await connection.close()
                } catch {
                    try? await connection.close()
                    throw error
                }
            } catch {
                if Task.isCancelled { break }
                let failure: PostgresStoreError
                if let deadline = error as? DeadlineExceeded {
                    failure = PostgresStoreError(.unreachable, "the listener on \(url.place): no answer within \(deadline.limit)")
                } else if error is ListenerConnectionEnded {
                    failure = PostgresStoreError(.unreachable, "the listener's connection to \(url.place) closed")
                } else {
                    failure = DatabaseFailure.classify(error, doing: "the listener", place: url.place)
                }
                if failure.isUnreachable { reachability.failed(failure.detail) }
                do { try await sleep(backoff.delay()) } catch { break }
            }
        }
    }

    private func listen(on connection: PostgresConnection, resetting backoff: inout Backoff) async throws {
        try await connection.listen(on: Schema.channel) { notifications in
            // LISTEN is active before the read: a write committed after the read announces itself.
            try await readChanges(on: connection)
            reachability.succeeded()
            backoff.reset()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await notification in notifications where !self.receivedLoginRequest(notification.payload) {
                        try await self.readChanges(on: connection)
                    }
                    throw ListenerConnectionEnded()
                }
                group.addTask {
                    while true {
                        try await self.sleep(self.settings.renewalPeriod)
                        try await withDeadline(self.settings.renewalPeriod, sleep: self.sleep) {
                            for try await _ in try await connection.query("SELECT 1", logger: self.quietLogger) {}
                        }
                        self.reachability.succeeded()
                    }
                }
                defer { group.cancelAll() }
                _ = try await group.next()
            }
        }
    }

    private var quietLogger: Logger {
        var quiet = logger
        quiet.logLevel = .critical
        return quiet
    }

    /// One read-back: every item row newer than the position, or written by a transaction that was in
    /// progress at the last read.
    func readChanges(on connection: PostgresConnection) async throws {
        guard let position = feed.position else { return }
        let rows = try await withDeadline(settings.lease, sleep: sleep) { [quietLogger] in
            var pending: [Int64] = []
            var found: [(Int32, [UInt8], [UInt8], Bool, Int64)] = []
            let rows = try await connection.query(
                """
                WITH snapshot AS (
                    SELECT coalesce(array_agg(x::text::bigint), '{}') AS pending FROM pg_snapshot_xip(pg_current_snapshot()) AS x)
                SELECT snapshot.pending, changed.kind, changed.id, changed.item, changed.present, changed.version
                FROM snapshot LEFT JOIN (
                    SELECT 1 AS kind, id, item, present, version FROM sessionkeeper_sessions
                        WHERE version > \(position.version) OR written_by = ANY(\(position.pending)::bigint[])
                    UNION ALL
                    SELECT 2, id, item, present, version FROM sessionkeeper_secrets
                        WHERE version > \(position.version) OR written_by = ANY(\(position.pending)::bigint[])
                ) AS changed ON true
                ORDER BY changed.version
                """, logger: quietLogger)
            for try await (xids, kind, id, item, present, version) in rows.decode(
                ([Int64], Int32?, ByteBuffer?, ByteBuffer?, Bool?, Int64?).self)
            {
                pending = xids
                if let kind, let id, let item, let present, let version {
                    found.append((kind, Array(id.readableBytesView), Array(item.readableBytesView), present, version))
                }
            }
            return (pending, found)
        }
        var changes: [StoreRowChange] = []
        var highest = position.version
        var keys = try self.keys()
        for (kind, id, bytes, present, version) in rows.1 {
            highest = max(highest, version)
            var opened = keys.open(bytes, id: id)
            if case .failure(.unknownKeyID) = opened {
                keys = try await refreshedKeys()
                opened = keys.open(bytes, id: id)
            }
            guard case let .success(item) = opened, item.item.kind == (kind == 1 ? .siteState : .credential) else {
                logger.warning(
                    "a changed item in the store cannot be read; skipped",
                    metadata: ["id": "\(SiteLeases.idKey(id))", "table": "\(kind == 1 ? "sessionkeeper_sessions" : "sessionkeeper_secrets")"])
                continue
            }
            if let rolledBack = writeCounters.check(item.counter, id: id) {
                logger.error(
                    "a changed item in the store is older than one this keeper has read; skipped",
                    metadata: ["item": "\(item.item)", "problem": "\(VaultError(rolledBack))"])
                continue
            }
            switch item.item.kind {
            case .siteState:
                var change = StoreRowChange(subject: .site(item.item.name), version: version, removed: !present)
                if present {
                    do {
                        change.session = try VaultSessionStore.record(from: item.value, site: item.item.name)
                    } catch {
                        change.problem = error.detail
                    }
                }
                changes.append(change)
            case .credential:
                changes.append(StoreRowChange(subject: .secret(item.item.name), version: version, removed: !present))
            }
        }
        feed.deliver(changes, newPosition: ChangeFeed.Position(version: highest, pending: rows.0))
    }
}
