import Locking

/// The memory the egress route holds in request bodies kept for a replay (SPEC section 10), all connections of
/// the socket and the loopback listeners together. Without it, each connection could hold
/// ``LoggedOutHandling/replayBodyLimit`` bytes while its answer is slow to come: a hundred uploads of 1 MiB
/// waiting on a slow site held a hundred MiB more. A body that does not fit streams to the site as it comes and
/// is not kept, so its request is not sent again after a login; the answer says so
/// (``LoggedOutHandling/bodyNotKeptValue``).
final class ReplayMemory: Sendable {
    /// The most bytes held at once.
    let limit: Int
    private let used = Locked(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` of the budget; false (nothing taken) when they do not fit beside what is held.
    func reserve(_ bytes: Int) -> Bool {
        used.withLock { used in
            guard bytes <= limit - used else { return false }
            used += bytes
            return true
        }
    }

    /// Gives back `bytes` taken with ``reserve(_:)``.
    func release(_ bytes: Int) {
        used.withLock { $0 -= bytes }
    }

    /// The bytes held now.
    var inUse: Int { used.withLock { $0 } }
}
