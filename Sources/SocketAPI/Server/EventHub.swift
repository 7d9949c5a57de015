import Daemon
import Foundation
import Locking
import Logging
import Platform

/// Fans the keeper's events out to the socket's event readers (`GET /v1/events`) and to the metrics.
///
/// It holds one subscription to the ``Keeper``; each reader has its own bounded buffer of
/// ``SocketServer/Limits/eventBuffer`` events and sees only the sites it may see. A reader that falls that far behind (it stopped
/// reading, or reads slower than the events come) is dropped: its stream ends and its connection is closed, so
/// nothing is buffered for it without bound. Every reader's stream ends when the server shuts down.
final class EventHub: Sendable {
    struct Reader: Sendable {
        var peer: PeerCredentials
        var feed: AsyncStream<String>.Continuation
        /// Closes the reader's connection: a response stuck writing to a client that stopped reading ends too.
        var close: @Sendable () -> Void
    }

    private let keeper: Keeper
    private let access: AccessControl
    private let metrics: DaemonMetrics
    private let readerBuffer: Int
    private let maxReaders: Int
    private let maxReadersPerUID: Int
    private let logger: Logger
    private let state = Locked<(readers: [UInt64: Reader], nextID: UInt64, sequence: UInt64)>(([:], 0, 0))

    init(keeper: Keeper, access: AccessControl, metrics: DaemonMetrics, limits: SocketServer.Limits, logger: Logger) {
        self.keeper = keeper
        self.access = access
        self.metrics = metrics
        self.readerBuffer = max(1, limits.eventBuffer)
        self.maxReaders = limits.maxEventReaders
        self.maxReadersPerUID = limits.maxEventReadersPerUID
        self.logger = logger
    }

    /// A comment line sent to every reader this often: a reader whose client went away is found out (its
    /// write fails) even while no event comes, and proxies keep the stream open.
    static let heartbeat: Duration = .seconds(15)

    /// Forwards the keeper's events, and a heartbeat, until the task is cancelled; then ends every reader's
    /// stream.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                while (try? await Task.sleep(for: Self.heartbeat)) != nil {
                    self.deliver(": heartbeat\n\n", to: self.state.withLock { $0.readers })
                }
            }
            while !Task.isCancelled {
                // A generous buffer: the hub only routes, so it falls behind only when the process is starved.
                for await event in await keeper.events(buffer: 4096) {
                    await route(event)
                }
                // The keeper ended the stream: it shut down, or the hub fell 4096 events behind. Subscribe again.
                if !Task.isCancelled { logger.debug("the keeper's event stream ended; subscribing again") }
            }
            group.cancelAll()
        }
        closeAll()
    }

    /// A new reader's stream of Server-Sent Event texts; `close` closes its connection when it is dropped.
    /// - Throws: a 503 ``APIError`` when as many readers as ``SocketServer/Limits/maxEventReaders`` are
    ///   subscribed, or as many of the peer's uid as ``SocketServer/Limits/maxEventReadersPerUID``.
    func subscribe(_ peer: PeerCredentials, close: @escaping @Sendable () -> Void) throws(APIError) -> AsyncStream<String> {
        let (stream, feed) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(readerBuffer))
        let subscribed = state.withLock { state -> Result<UInt64, APIError> in
            if state.readers.count >= maxReaders {
                return .failure(APIError(.serviceUnavailable, .tooMany, "\(maxReaders) event readers are subscribed (the cap)"))
            }
            if state.readers.values.count(where: { $0.peer.uid == peer.uid }) >= maxReadersPerUID {
                return .failure(APIError(
                    .serviceUnavailable, .tooMany, "uid \(peer.uid) has \(maxReadersPerUID) event readers subscribed (the cap per uid)"))
            }
            state.nextID += 1
            state.readers[state.nextID] = Reader(peer: peer, feed: feed, close: close)
            return .success(state.nextID)
        }
        let id = try subscribed.get()
        feed.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    /// Ends every reader's stream (shutdown).
    func closeAll() {
        let readers = state.withLock { state in
            defer { state.readers = [:] }
            return state.readers.values
        }
        for reader in readers { reader.feed.finish() }
    }

    private func remove(_ id: UInt64) {
        _ = state.withLock { $0.readers.removeValue(forKey: id) }
    }

    private func route(_ event: KeeperEvent) async {
        switch event {
        case .loginFinished(let site, let outcome, let duration):
            metrics.loginFinished(site: site, outcome: outcome, duration: duration)
        case .state(let change):
            metrics.stateChanged(site: change.site, to: change.to)
        case .checkFinished(let site, let outcome, _):
            metrics.checkFinished(site: site, outcome: outcome)
        case .cookies:
            break
        }
        let (readers, sequence) = state.withLock { state -> ([UInt64: Reader], UInt64) in
            state.sequence += 1
            return (state.readers, state.sequence)
        }
        guard !readers.isEmpty, let text = SiteWire.serverSentEvent(event, id: sequence) else { return }
        // A removed site's last events are shown to the peers that see every site only.
        let site = await keeper.snapshot(of: SiteWire.site(of: event))?.site
        if let site, !access.hasResolvedGroups(of: site) { await access.resolveMissingGroups(of: [site]) }
        deliver(text, to: readers.filter { _, reader in
            site.map { access.allows(reader.peer, site: $0) } ?? access.seesEverySite(reader.peer)
        })
    }

    /// Hands `text` to each reader; one whose buffer is full is dropped and its connection closed.
    private func deliver(_ text: String, to readers: [UInt64: Reader]) {
        for (id, reader) in readers {
            if case .dropped = reader.feed.yield(text) {
                remove(id)
                reader.feed.finish()
                reader.close()
                logger.warning("an event reader fell behind and was dropped", metadata: ["pid": "\(reader.peer.pid)"])
            }
        }
    }
}
