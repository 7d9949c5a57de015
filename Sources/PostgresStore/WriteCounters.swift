import Locking
import Vault

/// The highest write counter this keeper has read or written of each item row (the counter the keepers seal into
/// every row, `ItemFile` format 2), so that a row put back with a lower one (an older session or secret restored
/// by whoever can write the database) is refused as rolled back, and the next write of an item takes a counter
/// above every one seen. What a keeper has seen lives as long as it runs: a row rolled back while no keeper runs
/// is read as current by the next one (docs/SECURITY.md).
final class WriteCounters: Sendable {
    private let seen = Locked<[[UInt8]: UInt64]>([:])

    /// Records that the row `id` holds `counter`; the reason it is refused when that is below a counter seen.
    func check(_ counter: UInt64, id: [UInt8]) -> VaultError.Reason? {
        seen.withLock { seen in
            let known = seen[id] ?? 0
            if counter < known { return .rolledBack(found: counter, seen: known) }
            seen[id] = counter
            return nil
        }
    }

    /// The counter the next write of `id` takes: above every one seen and the one its row holds now (`stored`,
    /// read without a key: a higher claim only raises the counter). It counts as seen once the write is in
    /// (``written(_:id:)``): a write the database refused (a fenced one of a stale lease) leaves nothing behind.
    func next(for id: [UInt8], stored: [UInt8]?) -> UInt64 {
        seen.withLock { seen in max(seen[id] ?? 0, stored.flatMap(VaultKeys.writeCounter(of:)) ?? 0) + 1 }
    }

    /// Records a write of `id` with `counter` that the database took.
    func written(_ counter: UInt64, id: [UInt8]) {
        seen.withLock { seen in seen[id] = max(seen[id] ?? 0, counter) }
    }
}
