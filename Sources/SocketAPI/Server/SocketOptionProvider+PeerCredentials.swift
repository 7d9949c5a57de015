import NIOCore
import Platform

extension SocketOptionProvider {
    /// The peer's credentials (SO_PEERCRED) and the supplementary groups it had at connect(2) (SO_PEERGROUPS),
    /// both read by the channel's own socket option calls; see ``Platform/PeerCredentials/init(kernel:groups:)``
    /// for a peer in more groups than one call's buffer holds. Call it on the channel's event loop when the
    /// connection is accepted.
    func peerCredentials() -> EventLoopFuture<PeerCredentials> {
        let credentials: EventLoopFuture<KernelPeerCredentials> = unsafeGetSocketOption(
            level: SocketOptionLevel(KernelPeerCredentials.optionLevel), name: SocketOptionName(KernelPeerCredentials.optionName))
        let groups: EventLoopFuture<KernelPeerGroups?> = unsafeGetSocketOption(
            level: SocketOptionLevel(KernelPeerGroups.optionLevel), name: SocketOptionName(KernelPeerGroups.optionName)
        ).map { (groups: KernelPeerGroups) -> KernelPeerGroups? in groups }.recover { _ in nil }
        return credentials.and(groups).map { kernel, groups in PeerCredentials(kernel: kernel, groups: groups) }
    }
}
