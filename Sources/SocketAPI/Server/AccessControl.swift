import Locking
import NIOPosix
import Platform
import SiteConfig

/// Who may read and who may manage which site over the socket (SPEC section 8, "Reading is not managing").
///
/// A manager (``manages(_:)``: the daemon's own uid, root and `socket.allow_uids`) sees and manages every
/// site. A reader of a site is a peer its `access.uids` or `access.groups` let in: it reads the site's state,
/// cookies and events, reports a failed session and asks for a refresh that obeys the site's schedule, but
/// changes nothing others are served. A peer's groups are its primary gid and the supplementary groups the
/// kernel recorded for it (``PeerCredentials/supplementaryGroups``, SO_PEERGROUPS), so a client run with
/// `setpriv --clear-groups` or `newgrp` is judged by the groups it really has, not by /etc/group.
///
/// Group names are turned into gids off the event loop (an NSS lookup may ask LDAP and take seconds): all of
/// them when the sites are loaded and reloaded (``resolveGroups(of:)``), a name first seen later (a site file
/// added) on the first request that needs it (``resolveMissingGroups(of:)``). Judging a request only reads
/// the gids kept.
public final class AccessControl: Sendable {
    /// The daemon's uid.
    public let daemonUID: UInt32
    private let groupID: @Sendable (String) -> UInt32?
    private let state: Locked<State>

    private struct State {
        var allowUIDs: Set<UInt32>
        /// Each group name looked up, with its gid; nil for a name no group has.
        var groups: [String: UInt32?] = [:]
    }

    /// - Parameters:
    ///   - allowUIDs: `socket.allow_uids`.
    ///   - groupID: resolves a group name to its gid (getgrnam_r); injectable for tests of the rules. It may
    ///     block: it is only called on a thread of NIO's blocking pool.
    public init(
        daemonUID: UInt32, allowUIDs: [UInt32],
        groupID: @escaping @Sendable (String) -> UInt32? = { UnixSocket.groupID(named: $0) }
    ) {
        self.daemonUID = daemonUID
        self.groupID = groupID
        self.state = Locked(State(allowUIDs: Set(allowUIDs)))
    }

    /// `socket.allow_uids` now.
    public var allowUIDs: Set<UInt32> { state.withLock { $0.allowUIDs } }

    /// Takes a reloaded `socket.allow_uids`: every request judged from now on is judged by it.
    public func apply(allowUIDs: [UInt32]) {
        state.withLock { $0.allowUIDs = Set(allowUIDs) }
    }

    /// Whether `peer` manages every site: the daemon's uid, root or one of `socket.allow_uids`. The one rule
    /// for what only a manager may do: `set-cookie`, `answer`, a refresh that clears needs-attention, `reload`,
    /// `/metrics` (which names every site). A manager also reads every site.
    public func manages(_ peer: PeerCredentials) -> Bool {
        peer.uid == 0 || peer.uid == daemonUID || state.withLock { $0.allowUIDs.contains(peer.uid) }
    }

    /// Whether `peer` sees every site: the managers (``manages(_:)``).
    public func seesEverySite(_ peer: PeerCredentials) -> Bool { manages(peer) }

    /// Whether `peer` may read `site` (its state, its cookies, its events): a manager, or a peer its `access`
    /// lets in. A group name not yet resolved lets nobody in.
    public func allows(_ peer: PeerCredentials, site: SiteDefinition) -> Bool {
        if manages(peer) || site.access.uids.contains(peer.uid) { return true }
        guard !site.access.groups.isEmpty else { return false }
        let groups = Set(peer.allGroups)
        let known = state.withLock { $0.groups }
        return site.access.groups.contains { name in known[name].flatMap { $0 }.map(groups.contains) ?? false }
    }

    /// Looks up every group name of `sites` again, on a thread of NIO's blocking pool, and keeps the gids
    /// (names of sites no longer given are forgotten): at start and on every reload, so a group created or
    /// renumbered since counts.
    public func resolveGroups(of sites: [SiteDefinition]) async {
        let names = Set(sites.flatMap(\.access.groups))
        let resolved = await lookUp(names)
        state.withLock { $0.groups = resolved }
    }

    /// Looks up the group names of `sites` not looked up yet, off the event loop; returns at once when there
    /// are none (the usual case).
    func resolveMissingGroups(of sites: some Sequence<SiteDefinition>) async {
        let known = state.withLock { $0.groups }
        let missing = Set(sites.flatMap(\.access.groups)).filter { known[$0] == nil }
        guard !missing.isEmpty else { return }
        let resolved = await lookUp(missing)
        state.withLock { $0.groups.merge(resolved) { _, new in new } }
    }

    /// Whether every group name of `site` has been looked up (a lock and a dictionary read).
    func hasResolvedGroups(of site: SiteDefinition) -> Bool {
        site.access.groups.isEmpty || state.withLock { state in site.access.groups.allSatisfy { state.groups[$0] != nil } }
    }

    private func lookUp(_ names: Set<String>) async -> [String: UInt32?] {
        guard !names.isEmpty else { return [:] }
        let groupID = groupID
        let lookUp: @Sendable () -> [String: UInt32?] = {
            Dictionary(uniqueKeysWithValues: names.map { ($0, groupID($0)) })
        }
        // The pool stops only with the process; if it were not running the lookup happens here, still off the
        // event loop (callers are tasks, never a channel handler).
        return (try? await NIOThreadPool.singleton.runIfActive(lookUp)) ?? lookUp()
    }
}
