import Foundation
import Scheduler

// MARK: The board: each site's entry, published for readers who need no actor hop

extension Keeper {
    /// The session ``session(for:minValid:wait:)`` would return at once for `name`, read from the ``board``
    /// without waiting for the Keeper; nil when there is none fit to serve now (or no such site, or it is
    /// disabled): then only `session(for:minValid:wait:)` knows what to do and what to say.
    public nonisolated func servedNow(_ name: String, minValid: Duration?) -> ServedSession? {
        guard let entry = board.entry(of: name), entry.phase != .disabled else { return nil }
        return entry.usable(minValid: minValid, now: wallClock())
    }

    /// Publishes `name`'s entry as it is now to the ``board``.
    func publishBoard(_ name: String) {
        guard let entry = entries[name] else { return }
        board.publish(ServedBoard.Entry(site: entry.site, record: entry.record, session: entry.schedule.session, phase: entry.schedule.phase))
    }
}
