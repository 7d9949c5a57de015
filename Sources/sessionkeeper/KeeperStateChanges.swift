import Daemon
import Foundation
import Notify
import SiteConfig

// ADAPTER (issue 30, first half). The keeper does not yet publish `Notify.SiteStateChange`s, so `run` feeds
// the notifiers from its `KeeperEvent` stream through this adapter: a state change becomes a
// `SiteStateChange`; for needs-attention, the reason is read from the login outcome published just before
// it and from the site (a `login: manual` site), and the message from the keeper's status (its last error,
// already free of secrets). It covers needs-attention and recovered; waiting-for-person comes with the
// `prompt` step, when the keeper publishes the change, reason, message and prompt itself and this file goes.

/// The keeper's state changes as the notifiers take them.
struct KeeperStateChanges: AsyncSequence, Sendable {
    typealias Element = SiteStateChange
    typealias Failure = Never

    /// A subscription taken before the keeper starts (`Keeper.events()`), so no change is missed.
    let events: AsyncStream<KeeperEvent>
    let keeper: Keeper

    func makeAsyncIterator() -> Iterator {
        Iterator(events: events.makeAsyncIterator(), keeper: keeper)
    }

    struct Iterator: AsyncIteratorProtocol {
        var events: AsyncStream<KeeperEvent>.Iterator
        let keeper: Keeper
        /// The outcome of a login that just ended, by site: the keeper publishes it right before the state
        /// change the login caused.
        var justFinished: [String: String] = [:]

        mutating func next() async -> SiteStateChange? {
            while let event = await events.next() {
                switch event {
                case let .loginFinished(site, outcome, _):
                    justFinished[site] = outcome
                case let .state(site, time, from, to):
                    let outcome = justFinished.removeValue(forKey: site)
                    guard let from = SiteState(rawValue: from.rawValue), let to = SiteState(rawValue: to.rawValue) else { continue }
                    var change = SiteStateChange(site: site, time: time, from: from, to: to)
                    if to == .needsAttention {
                        let snapshot = await keeper.snapshot(of: site)
                        change.message = snapshot?.status.lastError.map(Self.withoutResponseExcerpt)
                        var manual = false
                        if case .manual? = snapshot?.site.login { manual = true }
                        // The keeper's typed reason, named as the notifiers name it.
                        change.reason = snapshot?.status.attention.flatMap { AttentionReason(rawValue: $0.reason.rawValue) }
                            ?? Self.reason(afterLogin: outcome, manual: manual)
                    }
                    return change
                case .cookies, .checkFinished:
                    continue
                }
            }
            return nil
        }

        /// A failure as the log gives it, without the last response's status, URL and page excerpt that
        /// `FlowError` appends (` [last response: …]`): a notification may go to a third party's service, and
        /// the page is the daemon's log's business.
        static func withoutResponseExcerpt(_ message: String) -> String {
            guard let start = message.range(of: " [last response: ") else { return message }
            return String(message[..<start.lowerBound])
        }

        /// Why a site went to needs-attention: the login that just ended says it (refused credentials, a
        /// configuration that cannot work, or another failure, which puts a site there only once
        /// `max_failures_per_day` is reached); without one, a check found the session dead, which for a
        /// manual site only an import mends.
        static func reason(afterLogin outcome: String?, manual: Bool) -> AttentionReason {
            switch outcome {
            case "credentials-refused"?: .credentialsRefused
            case "misconfigured"?: .misconfigured
            case "failed"?, "logged-out"?, "rate-limited"?: .dailyCapReached
            case nil where manual: .manualSessionDied
            default: .other
            }
        }
    }
}
