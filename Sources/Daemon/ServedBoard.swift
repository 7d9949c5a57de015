import Foundation
import Locking
import LoginFlow
import Scheduler
import Sessions
import SiteConfig

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
    /// One site as the Keeper last published it. A reference to an immutable publication, so the board's
    /// table holds a pointer per site (a site's definition inline is about a kilobyte, and a dictionary keeps
    /// up to twice its count in slots), and a reader copies a pointer under the lock, not the entry.
    public final class Entry: Sendable {
        public let site: SiteDefinition
        public let record: SessionRecord?
        /// The schedule's view of the session (nil: none it would serve).
        public let session: SessionSummary?
        public let phase: SiteSchedule.Phase
        /// ``ServedBoard/fitUntil(site:record:session:)`` of this publication, worked out once: it depends on
        /// nothing else, and every request for the site's cookies asks it (`.distantPast` without a session).
        let fitUntil: Date

        public init(site: SiteDefinition, record: SessionRecord?, session: SessionSummary?, phase: SiteSchedule.Phase) {
            self.site = site
            self.record = record
            self.session = session
            self.phase = phase
            if let record, let session {
                fitUntil = ServedBoard.fitUntil(site: site, record: record, session: session)
            } else {
                fitUntil = .distantPast
            }
        }

        /// ``ServedBoard/usable(site:record:session:minValid:now:)`` of this publication.
        func usable(minValid: Duration?, now: Date) -> ServedSession? {
            guard let record, ServedSession.isFit(until: fitUntil, at: now, minValid: minValid) else { return nil }
            return ServedSession(site: site, record: record)
        }
    }

    private let entries = Locked<[String: Entry]>([:])

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
    static func usable(
        site: SiteDefinition, record: SessionRecord?, session: SessionSummary?, minValid: Duration?, now: Date
    ) -> ServedSession? {
        guard let record, let session else { return nil }
        let until = fitUntil(site: site, record: record, session: session)
        guard ServedSession.isFit(until: until, at: now, minValid: minValid) else { return nil }
        return ServedSession(site: site, record: record)
    }

    /// The end of the time a session is fit at: fit at `horizon` exactly when `horizon` is before it
    /// (`.distantPast`: never; `.distantFuture`: nothing in it expires). Fit means the schedule saw the
    /// essential cookies, the schedule's expiry (the first essential cookie's) is still ahead, and each
    /// essential cookie has a copy in the record that has not expired (RFC 6265 section 5.3: a cookie lives
    /// until its expiry time, exclusive).
    static func fitUntil(site: SiteDefinition, record: SessionRecord, session: SessionSummary) -> Date {
        guard session.essentialCookiesPresent else { return .distantPast }
        return min(session.expiresAt ?? .distantFuture, essentialCookiesLiveUntil(site: site, record: record))
    }

    /// Until when every essential cookie of `site` has a copy in `record` that has not expired (RFC 6265
    /// section 5.3: a cookie lives until its expiry time, exclusive): `.distantPast` when one has none,
    /// `.distantFuture` when none of them expires.
    static func essentialCookiesLiveUntil(site: SiteDefinition, record: SessionRecord) -> Date {
        var until = Date.distantFuture
        // Read from the site's box once: `site.cookies` copies the whole cookie policy, and this runs for every
        // cookie a client asks for.
        let essential = site.cookies.essential
        let baseURL = site.baseURL
        for entry in essential {
            var latest = Date.distantPast
            for cookie in record.cookies where entry.matches(cookie, baseURL: baseURL) {
                latest = max(latest, cookie.expires ?? .distantFuture)
            }
            until = min(until, latest)
        }
        return until
    }
}
