import Locking
import NIOCore
import Platform

/// The peer credentials of every open connection, read once when the connection is admitted
/// (``ConnectionAdmission``, on the connection's event loop) and looked up by each request on it. Requests
/// never make a system call of their own for it.
final class PeerRegistry: Sendable {
    private let peers = Locked<[ObjectIdentifier: PeerCredentials]>([:])

    /// The peer of `channel` as it was admitted; nil for a connection the registry does not hold.
    func known(of channel: any Channel) -> PeerCredentials? {
        peers.withLock { $0[ObjectIdentifier(channel)] }
    }

    func set(_ peer: PeerCredentials, for key: ObjectIdentifier) {
        peers.withLock { $0[key] = peer }
    }

    func remove(_ key: ObjectIdentifier) {
        _ = peers.withLock { $0.removeValue(forKey: key) }
    }
}
