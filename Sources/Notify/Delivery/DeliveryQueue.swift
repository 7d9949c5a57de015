import Logging

/// When a failed delivery is tried again: after `firstDelay`, doubling up to `maximumDelay`, at most
/// `attempts` tries in all. The defaults try 12 times over about 20 minutes.
public struct RetryPolicy: Sendable, Hashable {
    public var firstDelay: Duration
    public var maximumDelay: Duration
    public var attempts: Int

    public init(firstDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(300), attempts: Int = 12) {
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
        self.attempts = max(1, attempts)
    }

    /// The wait after the `attempt`th try failed (1-based).
    public func delay(afterAttempt attempt: Int) -> Duration {
        var delay = firstDelay
        for _ in 1..<max(1, attempt) {
            delay *= 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}

/// One notifier's queue: items wait here and one worker (``run()``) delivers them in order, trying a
/// failed one again with ``RetryPolicy``'s backoff. Adding never waits: a login that ends in a notification
/// is never held up by a slow or dead receiver. The queue holds at most `capacity` items; when it is full
/// the oldest is dropped, and that is logged once until the queue has emptied again.
actor DeliveryQueue {
    let channel: any NotifierChannel
    let capacity: Int
    let retry: RetryPolicy
    private let sleep: @Sendable (Duration) async throws -> Void
    private let logger: Logger
    private let observe: @Sendable (NotificationOutcome) -> Void

    private var pending: [DeliveryItem] = []
    private var overflowLogged = false
    private var finishing = false
    private var waiter: CheckedContinuation<Void, Never>?

    init(
        channel: any NotifierChannel, capacity: Int, retry: RetryPolicy, logger: Logger,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        observe: @escaping @Sendable (NotificationOutcome) -> Void = { _ in }
    ) {
        self.observe = observe
        self.channel = channel
        self.capacity = max(1, capacity)
        self.retry = retry
        self.logger = logger
        self.sleep = sleep
    }

    /// Queues `item` (a re-send of firing alerts replaces one still waiting).
    func enqueue(_ item: DeliveryItem) {
        guard !finishing else { return }
        if case .firing = item, let waiting = pending.firstIndex(where: { if case .firing = $0 { true } else { false } }) {
            pending[waiting] = item
        } else {
            pending.append(item)
        }
        if pending.count > capacity {
            let dropped = pending.removeFirst()
            report(dropped, .dropped)
            if !overflowLogged {
                overflowLogged = true
                logger.warning("notifier queue full: dropping the oldest notifications", metadata: Self.metadata(dropped).merging([
                    "notifier": "\(channel.label)", "capacity": "\(capacity)",
                ]) { $1 })
            }
        }
        wake()
    }

    /// No more items: ``run()`` returns once what is queued is delivered (or given up).
    func finish() {
        finishing = true
        wake()
    }

    /// How many items wait.
    var count: Int { pending.count }

    /// Delivers items until ``finish()`` was called and the queue is empty, or the task is cancelled.
    func run() async {
        while let item = await next() {
            await deliver(item)
        }
    }

    private func next() async -> DeliveryItem? {
        while pending.isEmpty {
            overflowLogged = false
            if finishing || Task.isCancelled { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { waiter = $0 }
            } onCancel: {
                Task { await self.wake() }
            }
        }
        return pending.removeFirst()
    }

    private func wake() {
        waiter?.resume()
        waiter = nil
    }

    private func deliver(_ item: DeliveryItem) async {
        // A re-send of firing alerts is not retried: the next one follows anyway.
        let attempts = if case .firing = item { 1 } else { retry.attempts }
        for attempt in 1...attempts {
            switch await channel.deliver(item) {
            case .delivered:
                report(item, .delivered)
                logger.debug("notification delivered", metadata: Self.metadata(item).merging(["notifier": "\(channel.label)"]) { $1 })
                return
            case .failed(let reason):
                report(item, .failed)
                logger.error("notification not delivered", metadata: Self.metadata(item).merging([
                    "notifier": "\(channel.label)", "reason": "\(reason)",
                ]) { $1 })
                return
            case .retry(let reason):
                guard attempt < attempts else {
                    report(item, .failed)
                    logger.error("notification not delivered; giving up", metadata: Self.metadata(item).merging([
                        "notifier": "\(channel.label)", "reason": "\(reason)", "attempts": "\(attempt)",
                    ]) { $1 })
                    return
                }
                let delay = retry.delay(afterAttempt: attempt)
                logger.warning("notification not delivered; trying again", metadata: Self.metadata(item).merging([
                    "notifier": "\(channel.label)", "reason": "\(reason)", "attempt": "\(attempt)",
                    "retry_in_ms": "\(Int(delay / .milliseconds(1)))",
                ]) { $1 })
                do {
                    try await sleep(delay)
                } catch {
                    return
                }
            }
        }
    }

    private func report(_ item: DeliveryItem, _ outcome: NotificationOutcome.Result) {
        let event = switch item {
        case .notification(let notification), .ended(let notification): notification.event.rawValue
        case .firing: "firing"
        }
        observe(NotificationOutcome(notifier: channel.metricName, event: event, result: outcome))
    }

    private static func metadata(_ item: DeliveryItem) -> Logger.Metadata {
        switch item {
        case .notification(let notification), .ended(let notification):
            ["site": "\(notification.site)", "event": "\(notification.event.rawValue)", "incident": "\(notification.incident)"]
        case .firing(let notifications):
            ["event": "firing", "alerts": "\(notifications.count)"]
        }
    }
}

/// How one notification to one notifier ended, for `sessionkeeper_notifications_total{notifier,event,outcome}`.
public struct NotificationOutcome: Sendable, Hashable {
    public enum Result: String, Sendable, Hashable, CaseIterable {
        /// The notifier took it.
        case delivered
        /// It was refused for good, or every retry failed.
        case failed
        /// The notifier's queue was full and it was the oldest waiting.
        case dropped
    }

    /// The notifier's place in config.yaml (`notify[0]`): bounded, and free of URLs and secrets.
    public var notifier: String
    /// `waiting-for-person`, `needs-attention`, `recovered`, or `firing` (an Alertmanager re-send).
    public var event: String
    public var result: Result

    public init(notifier: String, event: String, result: Result) {
        self.notifier = notifier
        self.event = event
        self.result = result
    }
}

extension NotifierChannel {
    /// The label's first word (`notify[0]`), the notifier's name in metrics.
    var metricName: String { String(label.prefix { $0 != " " }) }
}
