import HTTPServer
import Locking
import Logging
import NIOCore
import Platform
import SiteConfig

/// Who may hold how many of the daemon's connections (``SocketServer/Limits/maxConnections`` for all peers
/// together, ``SocketServer/Limits/maxConnectionsPerUID`` for one uid), so that no peer, however many
/// connections it opens, keeps the others out. One admission counts the socket's connections and those of the
/// egress loopback listeners together: each is a file descriptor of the same process.
///
/// Each new connection's peer is read once before any byte of it is parsed (on the socket SO_PEERCRED and
/// SO_PEERGROUPS; on a loopback listener the uid from the kernel's socket diagnostics, ``LoopbackPeer``), and
/// counted; one over a cap gets a short 503 as soon as the connection is active, and the end of it
/// (``ConnectionGate``). An admitted
/// connection's peer goes into the ``PeerRegistry`` its requests are judged by, and its place is freed when it
/// closes.
final class ConnectionAdmission: ConnectionGate {
    /// The caps it counts against, and the deadlines of the connections it admits (``serverConfiguration``).
    let limits: SocketServer.Limits
    private let peers: PeerRegistry
    private let logger: Logger
    private let counts = Locked<(total: Int, byUID: [UInt32: Int])>((0, [:]))
    /// A peer opening thousands of connections over a cap, or trickling thousands of requests, gets one log
    /// line per ``LogThrottle/interval`` for each, not one per connection or request.
    private let refusals = LogThrottle()
    private let lateRequests = LogThrottle()

    init(limits: SocketServer.Limits, peers: PeerRegistry, logger: Logger) {
        self.limits = limits
        self.peers = peers
        self.logger = logger
    }

    /// The server core's bounds for the connections it admits: the request deadline and idle timeout, the header
    /// limits, and the JSON answers of what the core refuses by itself.
    var serverConfiguration: ServerConfiguration {
        var configuration = ServerConfiguration(
            requestDeadline: limits.requestDeadline, idleTimeout: limits.idleTimeout, refusalAnswer: APIError.answer(to:),
            onRequestCutOff: { [weak self] channel in self?.requestCutOff(on: channel) })
        configuration.maxHeaderFieldBytes = limits.maxHeaderFieldBytes
        configuration.maxHeaderListBytes = limits.maxHeaderListBytes
        configuration.maxHeaderFieldCount = limits.maxHeaderFieldCount
        return configuration
    }

    /// Reads the peer of `channel`, counts it and registers it; for a connection over a cap (or whose peer
    /// cannot be read), the refusal to answer it with. Never fails. Runs on the channel's event loop.
    func admit(_ channel: any Channel) -> EventLoopFuture<ServerResponse?> {
        admitting(channel).map { refusal in refusal?.response() }
    }

    private func admitting(_ channel: any Channel) -> EventLoopFuture<APIError?> {
        guard let peerRead = Self.readPeer(of: channel) else { return channel.eventLoop.makeSucceededFuture(nil) }
        return peerRead.map { peer in
            if let refusal = self.take(peer) {
                self.logRefusal(refusal, peer: peer)
                return refusal
            }
            let key = ObjectIdentifier(channel)
            self.peers.set(peer, for: key)
            channel.closeFuture.whenComplete { _ in
                self.peers.remove(key)
                self.release(peer)
            }
            return nil
        }.recover { _ in
            // Never a failed setup (the connection would stay open, unregistered): a peer that cannot be told
            // is refused like one over a cap.
            APIError(.forbidden, .forbidden, "the peer's credentials could not be read")
        }
    }

    /// The peer of a new connection; nil for a channel that is neither a Unix socket's nor a TCP one's.
    ///
    /// A loopback TCP connection's uid comes from one socket-diagnostics query (a netlink round trip, which the
    /// kernel answers at once); its process and groups are looked for at its first request, off the loop
    /// (``EgressListeners``). One the kernel cannot name is counted as nobody (uid `UInt32.max`): the listener
    /// then answers its requests the 404 of a site that does not exist, and all such connections share one
    /// uid's cap.
    private static func readPeer(of channel: any Channel) -> EventLoopFuture<PeerCredentials>? {
        if let local = channel.localAddress.flatMap(TCPEndpoint.init), let remote = channel.remoteAddress.flatMap(TCPEndpoint.init) {
            let uid = (try? LoopbackPeer.lookup(local: local, remote: remote, findingProcess: false))?.uid ?? .max
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(pid: 0, uid: uid, gid: .max))
        }
        return (channel as? any SocketOptionProvider)?.peerCredentials()
    }

    /// Counts a connection of `peer`, or says which cap it would pass.
    private func take(_ peer: PeerCredentials) -> APIError? {
        counts.withLock { counts in
            if counts.total >= limits.maxConnections {
                return APIError(
                    .serviceUnavailable, .tooMany, "the daemon holds \(limits.maxConnections) connections (its cap); try again shortly")
            }
            if counts.byUID[peer.uid, default: 0] >= limits.maxConnectionsPerUID {
                return APIError(
                    .serviceUnavailable, .tooMany,
                    "uid \(peer.uid) holds \(limits.maxConnectionsPerUID) connections (the cap per uid); close some first")
            }
            counts.total += 1
            counts.byUID[peer.uid, default: 0] += 1
            return nil
        }
    }

    private func logRefusal(_ refusal: APIError, peer: PeerCredentials) {
        guard let count = refusals.count() else { return }
        logger.warning("connections refused over a cap", metadata: [
            "uid": "\(peer.uid)", "pid": "\(peer.pid)", "reason": "\(refusal.message)", "refused": "\(count)",
        ])
    }

    /// A request on `channel` did not arrive whole within the request deadline (the server core answered it
    /// 408): logged with its peer, as a refusal is, so that an operator can tell which client trickles.
    func requestCutOff(on channel: any Channel) {
        guard let count = lateRequests.count() else { return }
        let peer = peers.known(of: channel)
        logger.warning("requests cut off at the request deadline (408)", metadata: [
            "uid": "\(peer.map { "\($0.uid)" } ?? "-")", "pid": "\(peer.map { "\($0.pid)" } ?? "-")",
            "deadline": "\(DurationText.format(limits.requestDeadline))", "cut_off": "\(count)",
        ])
    }

    /// The peer of `channel` as it was admitted; nil for a connection not admitted here.
    func peer(of channel: any Channel) -> PeerCredentials? {
        peers.known(of: channel)
    }

    private func release(_ peer: PeerCredentials) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byUID[peer.uid, default: 1] - 1
            counts.byUID[peer.uid] = left > 0 ? left : nil
        }
    }

    /// Connections admitted and open now (for tests and the metrics).
    var open: Int { counts.withLock { $0.total } }
}
