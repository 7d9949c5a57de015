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
public final class ReachabilityMonitor: Sendable {
    private struct State {
        var current: StoreReachability = .reachable
        var watchers: [UUID: AsyncStream<StoreReachability>.Continuation] = [:]
    }

    private let state = Locked(State())
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let place: String

    init(place: String, logger: Logger, now: @escaping @Sendable () -> Date) {
        self.place = place
        self.logger = logger
        self.now = now
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
        let (changed, wasDownSince) = state.withLock { state -> (Bool, Date?) in
            guard case let .unreachable(since, _) = state.current else { return (false, nil) }
            state.current = .reachable
            for watcher in state.watchers.values { watcher.yield(.reachable) }
            return (true, since)
        }
        if changed, let wasDownSince {
            let seconds = Int(now().timeIntervalSince(wasDownSince).rounded())
            logger.notice("store reachable again", metadata: ["database": "\(place)", "unreachable_for_s": "\(seconds)"])
        }
    }

    /// An attempt found the database out of reach. Logs only when it was reachable before.
    func failed(_ reason: String) {
        let changed = state.withLock { state -> Bool in
            switch state.current {
            case .reachable:
                state.current = .unreachable(since: now(), reason: reason)
                for watcher in state.watchers.values { watcher.yield(state.current) }
                return true
            case let .unreachable(since, _):
                // The latest reason is kept (it may change from "refused" to "authentication failed"), but
                // only a change of state is news.
                state.current = .unreachable(since: since, reason: reason)
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
