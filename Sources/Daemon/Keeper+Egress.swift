import Foundation
import Scheduler
import Sessions
import SiteConfig

// MARK: Egress: requests clients send through the daemon (SPEC section 10)

extension Keeper {
    /// A logged-out answer starts a login at most this often per site: a URL that answers 401 whatever the
    /// session (a page the account may not see) cannot make the daemon log in on every request. Answers that
    /// meet a login already running join it, whenever they come.
    public static let rejectionInterval: Duration = .seconds(10)

    /// A request sent through the daemon with the session of the login at `usedLogin` (its
    /// ``SessionRecord/lastLogin``) met an answer the site's `egress.logged_out` calls logged out.
    ///
    /// The one login of the site, whoever asks for it (the schedule, `refresh`, `min_valid`, a `report`'s check),
    /// serves every such request: when a session newer than the one used is served already, it is returned at
    /// once, with no login; when a login runs, the request waits for it; otherwise one starts now
    /// (``SiteSchedule/Event/sessionRejected(reason:)``), unless the site waits for a person, backs off after
    /// failed logins, or started one for a logged-out answer less than ``rejectionInterval`` ago.
    ///
    /// - Parameters:
    ///   - reason: which answer, for the site's last error (never a value).
    ///   - wait: the longest the request waits for the login.
    /// - Returns: the session to send the request again with, newer than the one used; nil when there is none
    ///   (the site is gone or disabled, no login could start, it failed, or the wait ran out).
    public func sessionRejected(_ name: String, usedLogin: Date, reason: String, wait: Duration) async -> ServedSession? {
        guard let entry = entries[name], entry.schedule.phase != .disabled else { return nil }
        if let served = renewed(entry, since: usedLogin) { return served }
        if !entry.schedule.loginRunning {
            let now = clock.now
            if let last = lastRejection[name], now - last < Self.rejectionInterval { return nil }
            lastRejection[name] = now
            if entry.record?.lastLogin == usedLogin { learn(.dead, at: wallClock(), site: name) }
            logger.info("a request through the daemon met a logged-out answer", metadata: ["site": "\(name)", "answer": "\(reason)"])
            dispatch(.sessionRejected(reason: "a request through the daemon met a logged-out answer (\(reason))"), to: name)
            rearm()
            guard entries[name]?.schedule.loginRunning == true else { return nil }
        }
        guard await waitForLogin(of: name, until: clock.now + wait), let after = entries[name] else { return nil }
        return renewed(after, since: usedLogin)
    }

    /// The session served for `entry` when it is fit to serve and comes from a login other than `usedLogin`.
    private func renewed(_ entry: Entry, since usedLogin: Date) -> ServedSession? {
        guard let record = entry.record, record.lastLogin != usedLogin else { return nil }
        return usable(entry, minValid: nil)
    }

    // MARK: Following the sites

    /// The kept sites' definitions now and after every change that ``apply(_:settings:)`` makes (the loopback
    /// listeners of `egress.listen` follow them). A follower that is slow sees only the latest list.
    public func siteDefinitions() -> AsyncStream<[SiteDefinition]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [SiteDefinition].self, bufferingPolicy: .bufferingNewest(1))
        nextID &+= 1
        let id = nextID
        siteListFollowers[id] = continuation
        // Unstructured: a termination handler is synchronous and may run on any thread; the keeper is reached by a hop.
        continuation.onTermination = { _ in Task { await self.unfollowSiteList(id) } }
        continuation.yield(currentDefinitions)
        return stream
    }

    var currentDefinitions: [SiteDefinition] { entries.values.map(\.site).sorted { $0.name < $1.name } }

    func publishSiteList() {
        guard !siteListFollowers.isEmpty else { return }
        let sites = currentDefinitions
        for continuation in siteListFollowers.values { continuation.yield(sites) }
    }

    func endSiteListFollowers() {
        for continuation in siteListFollowers.values { continuation.finish() }
        siteListFollowers = [:]
    }

    private func unfollowSiteList(_ id: UInt64) { siteListFollowers[id] = nil }
}
