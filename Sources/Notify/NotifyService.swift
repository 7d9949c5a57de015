import Foundation
import HTTPTransport
import Logging
import Scheduler
import ServiceLifecycle
import SiteConfig

/// The notifiers of config.yaml's `notify:` (SPEC section 12) as a `Service`: it consumes the sites' state
/// changes, turns them into incidents (``IncidentTracker``) and hands each notification to the queue of
/// every notifier that wants its event. Each queue delivers on its own, with retries, so a slow or dead
/// notifier delays neither the others nor anything that feeds the changes.
///
/// It runs until graceful shutdown (or cancellation), even when the changes end first (the daemon's keeper
/// ends them as it stops, before the service group asks this service to stop), so that what the keeper told
/// last is still delivered; what is still queued at shutdown gets ``shutdownGrace`` to go out.
public struct NotifyService: Service {
    /// Each notifier's queue holds at most this many notifications.
    public static let defaultQueueCapacity = 100
    /// Alertmanager wants active alerts re-sent every 30 seconds to 3 minutes, or it resolves them itself
    /// after its `resolve_timeout` (5 minutes by default).
    public static let defaultResendInterval: Duration = .seconds(60)
    public static let defaultShutdownGrace: Duration = .seconds(3)

    private let routes: [Route]
    private let changes: any AsyncSequence<SiteStateChange, Never> & Sendable
    private let logger: Logger
    private let resendInterval: Duration
    private let shutdownGrace: Duration
    /// What notifications' answer commands name as `--config` (``SiteNotification/answerConfig``).
    private let answerConfig: String?
    private let sleep: @Sendable (Duration) async throws -> Void

    /// One notifier and the events it is told.
    struct Route: Sendable {
        var queue: DeliveryQueue
        var events: [NotificationEvent]
        var resendsFiringAlerts: Bool
    }

    /// - Parameters:
    ///   - notifiers: each with the events it is told (``channels(for:client:environment:)`` makes them).
    ///   - changes: the sites' state changes, in order.
    ///   - sleep: waits for a duration, throwing when cancelled (retries, re-sends and the shutdown grace;
    ///     tests pass a faster or manual one).
    ///   - observe: told how each delivery ended (the daemon's metrics count them).
    public init(
        notifiers: [(channel: any NotifierChannel, events: [NotificationEvent])],
        changes: some AsyncSequence<SiteStateChange, Never> & Sendable,
        logger: Logger,
        queueCapacity: Int = NotifyService.defaultQueueCapacity,
        retry: RetryPolicy = RetryPolicy(),
        resendInterval: Duration = NotifyService.defaultResendInterval,
        shutdownGrace: Duration = NotifyService.defaultShutdownGrace,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        observe: @escaping @Sendable (NotificationOutcome) -> Void = { _ in },
        answerConfig: String? = nil
    ) {
        self.answerConfig = answerConfig
        routes = notifiers.map { notifier in
            Route(
                queue: DeliveryQueue(
                    channel: notifier.channel, capacity: queueCapacity, retry: retry, logger: logger, sleep: sleep, observe: observe),
                events: notifier.events, resendsFiringAlerts: notifier.channel.resendsFiringAlerts)
        }
        self.changes = changes
        self.logger = logger
        self.resendInterval = resendInterval
        self.shutdownGrace = shutdownGrace
        self.sleep = sleep
    }

    /// The channels of config.yaml's notifiers, in order, with their events; a notifier that cannot be set
    /// up (a header's environment variable is not set) is left out and returned among the problems.
    public static func channels(
        for settings: [NotifierSettings], client: any HTTPClient, environment: [String: String]
    ) -> (notifiers: [(channel: any NotifierChannel, events: [NotificationEvent])], problems: [NotifierSetupError]) {
        var notifiers: [(channel: any NotifierChannel, events: [NotificationEvent])] = []
        var problems: [NotifierSetupError] = []
        for (index, notifier) in settings.enumerated() {
            switch notifier.target {
            case .webhook(let webhook):
                do {
                    let channel = try WebhookChannel(webhook, index: index, timeout: notifier.timeout, client: client, environment: environment)
                    notifiers.append((channel, notifier.events))
                } catch {
                    problems.append(error)
                }
            case .command(let arguments):
                notifiers.append((CommandChannel(arguments, index: index, timeout: notifier.timeout, environment: environment), notifier.events))
            }
        }
        return (notifiers, problems)
    }

    private enum Ended { case queue, deadline, resender }

    /// Feeds the router every change until the changes end or the service is asked to shut down.
    private static func consume(_ changes: some AsyncSequence<SiteStateChange, Never> & Sendable, router: NotificationRouter) async {
        for await change in changes.cancelOnGracefulShutdown() {
            await router.handle(change)
        }
    }

    public func run() async throws {
        let router = NotificationRouter(routes: routes, answerConfig: answerConfig)
        await withTaskGroup(of: Ended.self) { group in
            for route in routes {
                group.addTask {
                    await route.queue.run()
                    return .queue
                }
            }
            if routes.contains(where: \.resendsFiringAlerts) {
                group.addTask { [sleep, resendInterval] in
                    while !Task.isCancelled {
                        do { try await sleep(resendInterval) } catch { break }
                        await router.resendFiring()
                    }
                    return .resender
                }
            }
            await Self.consume(changes, router: router)
            if !Task.isCancelled { try? await gracefulShutdown() }
            for route in routes { await route.queue.finish() }
            group.addTask { [sleep, shutdownGrace] in
                try? await sleep(shutdownGrace)
                return .deadline
            }
            var running = routes.count
            while running > 0, let ended = await group.next() {
                switch ended {
                case .queue: running -= 1
                case .deadline: running = 0
                case .resender: break
                }
            }
            let undelivered = await router.undelivered
            if undelivered > 0 {
                logger.warning("notifications still queued at shutdown were dropped", metadata: ["count": "\(undelivered)"])
            }
            group.cancelAll()
        }
    }
}

/// The incident tracker and the routes, behind one actor: changes come in order from one consumer, and
/// re-sends of firing alerts read the same tracker.
actor NotificationRouter {
    private var tracker = IncidentTracker()
    private let routes: [NotifyService.Route]
    private let answerConfig: String?

    init(routes: [NotifyService.Route], answerConfig: String?) {
        self.routes = routes
        self.answerConfig = answerConfig
    }

    func handle(_ change: SiteStateChange) async {
        for var notification in tracker.handle(change) {
            notification.answerConfig = answerConfig
            for route in routes {
                guard let item = Self.item(notification, for: route) else { continue }
                await route.queue.enqueue(item)
            }
        }
    }

    func resendFiring() async {
        let firing = tracker.firing.map { alert in
            var named = alert
            named.answerConfig = answerConfig
            return named
        }
        guard !firing.isEmpty else { return }
        for route in routes where route.resendsFiringAlerts {
            let alerts = firing.filter { route.events.contains($0.event) }
            if !alerts.isEmpty { await route.queue.enqueue(.firing(alerts)) }
        }
    }

    /// How many items wait in all queues.
    var undelivered: Int {
        get async {
            var total = 0
            for route in routes { total += await route.queue.count }
            return total
        }
    }

    /// What `route` is told of `notification`, or nil when nothing. A notifier is told the events it lists;
    /// one that re-sends firing alerts (Alertmanager) is also told the end of an event it was told, even when
    /// it does not list the event that ended it, or its alert would stay firing.
    static func item(_ notification: SiteNotification, for route: NotifyService.Route) -> DeliveryItem? {
        var routed = notification
        routed.ends = notification.ends.filter(route.events.contains)
        if route.events.contains(notification.event) { return .notification(routed) }
        if route.resendsFiringAlerts, !routed.ends.isEmpty { return .ended(routed) }
        return nil
    }
}
