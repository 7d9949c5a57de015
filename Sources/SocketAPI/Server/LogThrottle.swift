import Locking
import NIOCore

/// At most one log line per ``interval`` for an event a client can repeat at will (a connection refused over
/// a cap, a request cut off at its deadline), each line saying how many happened since the last one: a
/// flood of them costs the log a line every ten seconds, and none is hidden.
final class LogThrottle: Sendable {
    static let defaultInterval = TimeAmount.seconds(10)

    let interval: TimeAmount
    private let state = Locked<(unlogged: Int, lastLogged: NIODeadline?)>((0, nil))

    init(interval: TimeAmount = LogThrottle.defaultInterval) {
        self.interval = interval
    }

    /// Counts one event. Returns how many to report, this one included, when a line is due; nil when the last
    /// line is younger than ``interval`` (the event is then reported with the next line).
    func count(now: NIODeadline = .now()) -> Int? {
        state.withLock { state -> Int? in
            state.unlogged += 1
            if let last = state.lastLogged, now - last < interval { return nil }
            defer { state = (0, now) }
            return state.unlogged
        }
    }
}
