import Platform
import SiteConfig

/// Who may see which site over the socket (SPEC section 8): the daemon's own uid and root see every site,
/// so do `socket.allow_uids`; a site's `access.uids` and `access.groups` see that site. A peer's groups are
/// its primary gid and the supplementary groups of its process (``PeerCredentials/supplementaryGroups``, from
/// `/proc/PID/status`, so a client run with `setpriv --clear-groups` or `newgrp` is judged by the groups it
/// really has, not by /etc/group). Group names are resolved when a request is judged, so a group created after
/// the daemon started counts.
public struct AccessControl: Sendable {
    /// The daemon's uid.
    public var daemonUID: UInt32
    /// `socket.allow_uids`.
    public var allowUIDs: Set<UInt32>
    /// Resolves a group name to its gid (getgrnam_r); injectable for tests of the rules.
    public var groupID: @Sendable (String) -> UInt32?

    public init(
        daemonUID: UInt32, allowUIDs: [UInt32],
        groupID: @escaping @Sendable (String) -> UInt32? = { UnixSocket.groupID(named: $0) }
    ) {
        self.daemonUID = daemonUID
        self.allowUIDs = Set(allowUIDs)
        self.groupID = groupID
    }

    /// Whether `peer` sees every site.
    public func seesEverySite(_ peer: PeerCredentials) -> Bool {
        peer.uid == 0 || peer.uid == daemonUID || allowUIDs.contains(peer.uid)
    }

    /// Whether `peer` may see `site` (its state, its cookies, its events) and act on it.
    public func allows(_ peer: PeerCredentials, site: SiteDefinition) -> Bool {
        if seesEverySite(peer) || site.access.uids.contains(peer.uid) { return true }
        guard !site.access.groups.isEmpty else { return false }
        let groups = Set(peer.allGroups)
        return site.access.groups.contains { name in groupID(name).map(groups.contains) ?? false }
    }
}
