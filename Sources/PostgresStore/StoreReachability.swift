import Foundation
import Locking
import Logging

/// Whether a keeper can use its fleet's database.
public enum StoreReachability: Sendable, Hashable, CustomStringConvertible {
    /// Statements go through.
    case reachable
    /// Nothing has gone through since `since`; `reason` is the latest failure (never with a password).
    case unreachable(since: Date, reason: String)

    public var isReachable: Bool { self == .reachable }

    public var description: String {
        switch self {
        case .reachable: "reachable"
        case let .unreachable(since, reason): "unreachable since \(since.formatted(.iso8601)): \(reason)"
        }
    }
}

/// The store's reachability as every statement and the listener's connection see it: the current state,
/// a stream of its changes for whoever watches (status, health, metrics), and one log line per change,
/// never one per failed attempt.
///
/// Down at the first failure, up again only once successes have held for `settle` with no failure between
/// them: after a restart the listener reconnects at once while the pool's connections are still backing off,
/// and a rule of one success would report reachable, unreachable, reachable for one outage.
public final class ReachabilityMonitor: Sendable {
    private struct State {
        var current: StoreReachability = .reachable
        var watchers: [UUID: AsyncStream<StoreReachability>.Continuation] = [:]
        /// While unreachable: the first success since the latest failure.
        var recoveringSince: Date?
    }

    private let state = Locked(State())
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let place: String
    private let settle: TimeInterval

    init(place: String, logger: Logger, now: @escaping @Sendable () -> Date, settle: Duration) {
        self.place = place
        self.logger = logger
        self.now = now
        self.settle = settle / .seconds(1)
    }

    /// The state now.
    public var current: StoreReachability { state.withLock { $0.current } }

    /// The current state first, then every change, until the caller stops iterating.
    public func changes() -> AsyncStream<StoreReachability> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreReachability.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        state.withLock { state in
            continuation.yield(state.current)
            state.watchers[id] = continuation
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// A statement or the listener reached the database.
    func succeeded() {
        let time = now()
        let wasDownSince = state.withLock { state -> Date? in
            guard case let .unreachable(since, _) = state.current else { return nil }
            let first = state.recoveringSince ?? time
            state.recoveringSince = first
            guard time.timeIntervalSince(first) >= settle else { return nil }
            state.current = .reachable
            state.recoveringSince = nil
            for watcher in state.watchers.values { watcher.yield(.reachable) }
            return since
        }
        if let wasDownSince {
            let seconds = Int(time.timeIntervalSince(wasDownSince).rounded())
            logger.notice("store reachable again", metadata: ["database": "\(place)", "unreachable_for_s": "\(seconds)"])
        }
    }

    /// An attempt found the database out of reach. Logs only when it was reachable before. `reason` replaces
    /// the one kept unless `keepingReason` (a silence says less than the refusal found before it).
    func failed(_ reason: String, keepingReason: Bool = false) {
        let changed = state.withLock { state -> Bool in
            state.recoveringSince = nil
            switch state.current {
            case .reachable:
                state.current = .unreachable(since: now(), reason: reason)
                for watcher in state.watchers.values { watcher.yield(state.current) }
                return true
            case let .unreachable(since, earlier):
                // The latest reason is kept (it may change from "refused" to "authentication failed"), but
                // only a change of state is news.
                state.current = .unreachable(since: since, reason: keepingReason ? earlier : reason)
                return false
            }
        }
        if changed {
            logger.warning("store unreachable; serving what this keeper holds, taking no lease", metadata: ["database": "\(place)", "reason": "\(reason)"])
        }
    }

    /// Ends every watcher's stream (the store closed).
    func finish() {
        let watchers = state.withLock { state -> [AsyncStream<StoreReachability>.Continuation] in
            defer { state.watchers = [:] }
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.finish() }
    }
}
