import Foundation
import Scheduler
import Sessions
import SiteConfig
import Synchronization

/// What the ``Keeper`` serves for each site, readable from any thread without waiting for the Keeper.
///
/// The socket's hot request, "the cookies of site S", needs only a site's definition, its session and what its
/// schedule knows of that session. Asking the Keeper actor for them cost two actor hops per request, and
/// the Keeper is the one place every login, check and timer goes through, so requests queued behind it.
/// The Keeper writes each site's entry here, under a lock, whenever one of the three changes (a copy of the
/// values, never a reference to its own state), so a reader sees exactly what the Keeper would have answered
/// at some moment no older than the last change. Whatever needs more (a login, a wait, an error with its
/// reason) still asks the Keeper.
public final class ServedBoard: Sendable {
    /// One site as the Keeper last published it.
    public struct Entry: Sendable {
        public var site: SiteDefinition
        public var record: SessionRecord?
        /// The schedule's view of the session (nil: none it would serve).
        public var session: SessionSummary?
        public var phase: SiteSchedule.Phase
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    /// The entry of `name`; nil when the Keeper keeps no such site.
    public func entry(of name: String) -> Entry? {
        entries.withLock { $0[name] }
    }

    func publish(_ entry: Entry) {
        entries.withLock { $0[entry.site.name] = entry }
    }

    func remove(_ name: String) {
        _ = entries.withLock { $0.removeValue(forKey: name) }
    }

    /// The session to serve for `entry` when it is fit: present, its essential cookies all there and (with
    /// `minValid`) the first of them unexpired for at least `minValid` more. The one rule the Keeper and the
    /// board's readers both apply.
    static func usable(site: SiteDefinition, record: SessionRecord?, session: SessionSummary?, minValid: Duration?, now: Date)
        -> ServedSession?
    {
        guard let record, session?.essentialCookiesPresent ?? false else { return nil }
        let horizon = now.addingTimeInterval(minValid.map { $0 / .seconds(1) } ?? 0)
        guard Keeper.summary(record, site: site, now: horizon).essentialCookiesPresent,
              session?.isValid(at: horizon) ?? false
        else { return nil }
        return ServedSession(site: site, record: record)
    }
}
