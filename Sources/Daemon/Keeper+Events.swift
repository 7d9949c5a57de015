import Foundation
import Logging
import Scheduler
import Sessions

// MARK: Events: what happened to each site, for the socket's event stream and metrics

extension Keeper {
    /// Every state change, cookie change and finished login from now on. Each subscriber has a buffer of
    /// `buffer` events: one that falls that far behind is dropped (its stream ends) rather than buffered
    /// without bound.
    public func events(buffer: Int = 256) -> AsyncStream<KeeperEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: KeeperEvent.self, bufferingPolicy: .bufferingOldest(max(1, buffer)))
        nextID &+= 1
        let id = nextID
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    /// Ends every event stream (shutdown: the socket's event readers finish their responses).
    public func endEventStreams() {
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }

    func unsubscribe(_ id: UInt64) { subscribers[id] = nil }

    func publish(_ event: KeeperEvent) {
        for (id, continuation) in subscribers {
            if case .dropped = continuation.yield(event) {
                subscribers[id] = nil
                continuation.finish()
                logger.warning("an event reader fell behind and was dropped", metadata: ["buffer": "full"])
            }
        }
    }

    /// Makes `record` the session served for `name`, telling subscribers when its cookies changed.
    func serve(_ record: SessionRecord, site name: String) {
        guard let before = entries[name] else { return }
        entries[name]?.record = record
        publishBoard(name)
        guard before.record != record else { return }
        publish(.cookies(
            site: name, time: wallClock(), names: record.liveCookies(at: wallClock()).map(\.name), expiresAt: record.expiresAt))
    }
}

/// Something that happened to a site, for the socket's event stream and metrics. Names and times, never a
/// cookie value.
public enum KeeperEvent: Sendable, Hashable {
    /// The site's state changed.
    case state(site: String, time: Date, from: SiteSchedule.Phase, to: SiteSchedule.Phase)
    /// The served session's cookies changed (a login, a keepalive's renewal, cookies a client handed back, a
    /// session another process stored): the live cookies' names and the session's end.
    case cookies(site: String, time: Date, names: [String], expiresAt: Date?)
    /// A login ended; `outcome` is ``RunOutcome/name``.
    case loginFinished(site: String, outcome: String, duration: Duration)
    /// A check ended; `outcome` is ``RunOutcome/name``.
    case checkFinished(site: String, outcome: String, duration: Duration)
}

