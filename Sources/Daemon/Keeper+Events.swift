import CookieJar
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
        // Unstructured: a termination handler is synchronous and may run on any thread; the keeper is reached by a hop.
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

    /// The change of `name`'s state to what `schedule` says now, with what a person needs to know of it: the reason
    /// and message of needs-attention (`notice` when the run that ended gave one without the site's page, else the
    /// schedule's last error), the waiting prompt.
    func stateChange(of name: String, from: SiteSchedule.Phase, schedule: SiteSchedule, notice: String?) -> SiteStateChange {
        var change = SiteStateChange(site: name, time: wallClock(), from: from, to: schedule.phase)
        switch schedule.phase {
        case .needsAttention:
            change.reason = schedule.attentionReason ?? .other
            change.message = notice ?? schedule.lastError
        case .waitingForPerson:
            change.prompt = schedule.prompt
            change.message = schedule.prompt?.message
        case .valid, .loggingIn, .refreshing, .failed, .disabled:
            break
        }
        return change
    }

    /// Makes `record` the session served for `name`, telling subscribers when its cookies changed.
    func serve(_ record: SessionRecord, site name: String) {
        guard let before = entries[name] else { return }
        entries[name]?.record = record
        learn(from: record, site: name)
        publishBoard(name)
        guard before.record != record else { return }
        publish(.cookies(
            site: name, time: wallClock(), names: Cookie.labels(record.liveCookies(at: wallClock())), expiresAt: record.expiresAt))
    }
}

/// Something that happened to a site, for the socket's event stream and metrics. Names and times, never a
/// cookie value.
public enum KeeperEvent: Sendable, Hashable {
    /// The site's state changed, with why it needs a person (needs-attention) or the prompt that waits
    /// (waiting-for-person). A site that needs a person from its start (a `login: manual` site without a
    /// session) is published too, from the placeholder state `failed`.
    case state(SiteStateChange)
    /// The served session's cookies changed (a login, a keepalive's renewal, cookies a client handed back, a
    /// session another process stored): the live cookies' names and the session's end.
    case cookies(site: String, time: Date, names: [String], expiresAt: Date?)
    /// A login ended; `outcome` is ``RunOutcome/name``.
    case loginFinished(site: String, outcome: String, duration: Duration)
    /// A check ended; `outcome` is ``RunOutcome/name``.
    case checkFinished(site: String, outcome: String, duration: Duration)
}

