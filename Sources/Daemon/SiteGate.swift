import Foundation
import Locking
import Sessions

/// Who may run a site now. The ``Keeper`` asks its gate before every login, check and keepalive and runs through
/// the login path the gate hands it; it never asks whether it is one of a fleet. One machine's gate,
/// ``OpenSiteGate``, runs every site here; fleet mode's, ``LeaseGate``, runs a site only under its lease (SPEC
/// section 11), and the sites it does not hold follow the sessions the holder stores.
public protocol SiteGate: Sendable {
    /// Whether a site the keeper starts keeping runs at once; false: it follows the sessions another process
    /// stores until the gate opens for it (``Keeper/gateChanged(_:)``).
    var runsNewSites: Bool { get }
    /// Whether the keeper deletes the stored session of a site it stops keeping; false when the sessions are
    /// shared with other keepers, whose sites/ may still hold the site.
    var ownsStoredSessions: Bool { get }
    /// The login path a run of `site` goes through now, built on `login`; nil when this keeper may not run the
    /// site now.
    func loginPath(for site: String, over login: SiteLogin, at now: ContinuousClock.Instant) -> SiteLogin?
    /// Whether another process runs `site`: a client's need for a login is passed to it
    /// (``askForLogin(of:refresh:)``) rather than started here.
    func runsElsewhere(_ site: String) -> Bool
    /// For `status`: whether this keeper holds `site` (false: it follows the holder); nil when there is nothing
    /// to hold.
    func holds(_ site: String) -> Bool?
    /// Passes a client's need for a login of `site` to the process that runs it; `refresh` says a manager asked.
    func askForLogin(of site: String, refresh: Bool) async
    /// The keeper stops running `site` (it was given back, or the keeper dropped it). Returns whether the gate
    /// had let the keeper run it until now.
    @discardableResult func release(_ site: String) -> Bool
    /// A session write of `site` was refused because another keeper took the site over meanwhile.
    func countStaleWrite()
    /// What `status`, `/v1/health` and `/metrics` show of the store and the leases; nil when there is no fleet.
    func state() -> FleetState?
}

/// What changed at the gate: the sites the keeper may run from now on, and those it may not any more, with why
/// (for the log).
public struct SiteGateChange: Sendable, Hashable {
    public var opened: [String]
    public var closed: [Closed]

    public struct Closed: Sendable, Hashable {
        public var site: String
        public var reason: String

        public init(site: String, reason: String) {
            self.site = site
            self.reason = reason
        }
    }

    public init(opened: [String] = [], closed: [Closed] = []) {
        self.opened = opened
        self.closed = closed
    }
}

/// One machine's gate: every site runs here, through the keeper's own login path, and its sessions are this
/// keeper's alone.
public struct OpenSiteGate: SiteGate {
    public init() {}

    public var runsNewSites: Bool { true }
    public var ownsStoredSessions: Bool { true }
    public func loginPath(for site: String, over login: SiteLogin, at now: ContinuousClock.Instant) -> SiteLogin? { login }
    public func runsElsewhere(_ site: String) -> Bool { false }
    public func holds(_ site: String) -> Bool? { nil }
    public func askForLogin(of site: String, refresh: Bool) async {}
    public func release(_ site: String) -> Bool { false }
    public func countStaleWrite() {}
    public func state() -> FleetState? { nil }
}

/// A site's lease as the keeper acts under it (fleet mode, SPEC section 11): until `deadline` on the keeper's
/// monotonic clock, and with its writes going through `store`, which refuses them once another keeper took the
/// site over (``Sessions/SessionStoreError/Kind/staleEpoch``).
public struct HeldLease: Sendable {
    public var site: String
    /// Incremented at every takeover; for the log.
    public var epoch: Int64
    /// When the keeper must stop acting on the site unless the lease is renewed first.
    public var deadline: ContinuousClock.Instant
    /// The session store fenced by this lease.
    public var store: any SessionStore

    public init(site: String, epoch: Int64, deadline: ContinuousClock.Instant, store: any SessionStore) {
        self.site = site
        self.epoch = epoch
        self.deadline = deadline
        self.store = store
    }

    /// Whether the lease may still be acted on at `now`.
    public func isValid(at now: ContinuousClock.Instant) -> Bool { now < deadline }
}

/// What a keeper of a fleet tells of its store and leases: `status`, `/v1/health` and `/metrics`.
public struct FleetState: Sendable, Hashable {
    /// Whether the database answers now.
    public var storeReachable = true
    /// Since when it does not, on the wall clock.
    public var unreachableSince: Date?
    /// Why it does not (never a password).
    public var unreachableReason: String?
    /// Leases this keeper holds now.
    public var leasesHeld = 0
    /// Session writes refused because another keeper took the site over meanwhile.
    public var staleWrites = 0

    public init() {}
}

/// Fleet mode's gate (SPEC section 11, docs/FLEET.md): a site runs only while this keeper holds its lease, and
/// every run stores through the store fenced by that lease. The lease service (Assembly's `FleetService`) hands
/// it the leases held and lost after each renewal (``leasesChanged(held:lost:in:)``), the database's
/// reachability, and how to ask the holder of a site for a login. Its changes reach the keeper inside one of the
/// keeper's steps, so the keeper never sees a lease its schedules have not heard of.
public final class LeaseGate: SiteGate {
    private struct State {
        var leases: [String: HeldLease] = [:]
        var fleet = FleetState()
        var askHolder: (@Sendable (_ site: String, _ refresh: Bool) async -> Void)?

        mutating func countHeld() { fleet.leasesHeld = leases.count }
    }

    private let locked = Locked(State())

    public init() {}

    public var runsNewSites: Bool { false }
    // A fleet's session is every keeper's: one keeper's sites/ dropping a site does not delete it.
    public var ownsStoredSessions: Bool { false }

    public func loginPath(for site: String, over login: SiteLogin, at now: ContinuousClock.Instant) -> SiteLogin? {
        guard let lease = locked.withLock({ $0.leases[site] }), lease.isValid(at: now) else { return nil }
        return login.storing(in: lease.store)
    }

    public func runsElsewhere(_ site: String) -> Bool { locked.withLock { $0.leases[site] == nil } }

    public func holds(_ site: String) -> Bool? { locked.withLock { $0.leases[site] != nil } }

    public func askForLogin(of site: String, refresh: Bool) async {
        await locked.withLock { $0.askHolder }?(site, refresh)
    }

    public func release(_ site: String) -> Bool {
        locked.withLock { state in
            defer { state.countHeld() }
            return state.leases.removeValue(forKey: site) != nil
        }
    }

    public func countStaleWrite() { locked.withLock { $0.fleet.staleWrites += 1 } }

    public func state() -> FleetState? { locked.withLock { $0.fleet } }

    /// The epoch of the lease held for `site`, for the log; nil when none is held.
    public func epoch(of site: String) -> Int64? { locked.withLock { $0.leases[site]?.epoch } }

    /// Sets how a client's need for a login is passed to the keeper holding a site's lease; `refresh` says a
    /// manager asked, not a client's `min_valid`/`wait`.
    public func setLoginRequester(_ ask: @escaping @Sendable (_ site: String, _ refresh: Bool) async -> Void) {
        locked.withLock { $0.askHolder = ask }
    }

    /// The database's reachability changed (one log line per change is the store's).
    public func storeReachability(reachable: Bool, since: Date?, reason: String?) {
        locked.withLock { state in
            state.fleet.storeReachable = reachable
            state.fleet.unreachableSince = reachable ? nil : since
            state.fleet.unreachableReason = reachable ? nil : reason
        }
    }

    /// The lease service's news: `held` are the leases this keeper holds now, renewed or newly taken; `lost` the
    /// sites whose lease it held and does not any more. A site newly held is planned from the session the store
    /// holds now; a site lost stops its runs at once (logged once) and follows the holder's sessions.
    public func leasesChanged(held: [HeldLease], lost: [String], in keeper: Keeper) async {
        await keeper.gateChanged { _ in
            self.locked.withLock { state in
                defer { state.countHeld() }
                var change = SiteGateChange()
                for name in lost where state.leases.removeValue(forKey: name) != nil {
                    change.closed.append(.init(site: name, reason: "another keeper took it or it expired before its renewal"))
                }
                for lease in held {
                    if state.leases[lease.site] == nil { change.opened.append(lease.site) }
                    state.leases[lease.site] = lease
                }
                return change
            }
        }
    }

    /// Drops every lease whose deadline passed (the database did not answer its renewal in time, or the process
    /// was paused): their sites stop at once. The lease service calls it every renewal period it cannot renew,
    /// and a run checks its own lease before it starts.
    public func expireLeases(in keeper: Keeper) async {
        await keeper.gateChanged { now in
            self.locked.withLock { state in
                defer { state.countHeld() }
                let expired = state.leases.values.filter { !$0.isValid(at: now) }.map(\.site).sorted()
                for name in expired { state.leases[name] = nil }
                return SiteGateChange(closed: expired.map { .init(site: $0, reason: "its deadline passed before a renewal") })
            }
        }
    }
}
