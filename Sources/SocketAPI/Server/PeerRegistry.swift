import Hummingbird
import Locking
import NIOCore
import Platform

/// The peer credentials of every open connection, read once when the connection is accepted (SO_PEERCRED, on
/// the connection's event loop) and looked up by each request on it. Requests never make a system call of
/// their own for it.
final class PeerRegistry: Sendable {
    private let peers = Locked<[ObjectIdentifier: PeerCredentials]>([:])

    /// The handler that fills the registry for one connection; Hummingbird adds one to every new channel.
    func makeHandler() -> PeerCredentialsHandler { PeerCredentialsHandler(registry: self) }

    /// The peer of `channel`: from the registry, or read now when the connection's own read has not finished.
    func peer(of channel: any Channel) async -> PeerCredentials? {
        if let known = peers.withLock({ $0[ObjectIdentifier(channel)] }) { return known }
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        return try? await provider.peerCredentials().get()
    }

    /// The peer of `channel` when its read has finished; never waits.
    func known(_ channel: any Channel) -> PeerCredentials? {
        peers.withLock { $0[ObjectIdentifier(channel)] }
    }

    fileprivate func set(_ peer: PeerCredentials, for key: ObjectIdentifier) {
        peers.withLock { $0[key] = peer }
    }

    fileprivate func remove(_ key: ObjectIdentifier) {
        _ = peers.withLock { $0.removeValue(forKey: key) }
    }
}

/// Passes every inbound part through untouched; its only work is reading the peer's credentials when it is
/// added to a new connection's pipeline, and forgetting them when the connection closes.
final class PeerCredentialsHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private let registry: PeerRegistry

    init(registry: PeerRegistry) {
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let provider = context.channel as? any SocketOptionProvider else { return }
        let key = ObjectIdentifier(context.channel)
        provider.peerCredentials().whenSuccess { [registry] peer in registry.set(peer, for: key) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        registry.remove(ObjectIdentifier(context.channel))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }
}
