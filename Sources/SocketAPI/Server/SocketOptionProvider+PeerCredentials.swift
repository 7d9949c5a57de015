import NIOCore
import Platform

extension SocketOptionProvider {
    /// The peer's credentials (SO_PEERCRED, read by the channel's own socket option call) and its supplementary
    /// groups (``Platform/PeerCredentials/init(kernel:)``). Call it on the channel's event loop when the connection is
    /// accepted.
    func peerCredentials() -> EventLoopFuture<PeerCredentials> {
        unsafeGetSocketOption(
            level: SocketOptionLevel(KernelPeerCredentials.optionLevel), name: SocketOptionName(KernelPeerCredentials.optionName)
        ).map { (raw: KernelPeerCredentials) in PeerCredentials(kernel: raw) }
    }
}
