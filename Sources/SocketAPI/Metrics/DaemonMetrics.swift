import CoreMetrics
import Daemon
import Foundation
import Locking
import Prometheus
import Scheduler

/// `GET /metrics` (SPEC section 8): counters and histograms kept through swift-metrics, written in the
/// Prometheus text format by swift-prometheus. Each server has its own registry (no process-wide metrics
/// bootstrap), so several daemons in one test process never share counts.
///
/// Families, all labelled by names, never by values:
/// - `sessionkeeper_logins_total{site,outcome}`: logins ended, by outcome (`ok`, `credentials-refused`, ...);
/// - `sessionkeeper_login_duration_seconds{site}`: histogram of login durations;
/// - `sessionkeeper_checks_total{site,outcome}`: checks ended, by outcome (`ok`, `logged-out`, `site-down`, ...);
/// - `sessionkeeper_session_expires_in_seconds{site}`: seconds until the served session's first essential
///   cookie expires (only sites whose session has an expiry);
/// - `sessionkeeper_learned_seconds{site,what,bound}`: what was learned of a site's sessions (SPEC section 7):
///   `what` is `idle_timeout` or `lifetime`, `bound` is `alive` (the longest seen survived) or `dead` (the
///   shortest found dead, only once one was); `sessionkeeper_learned_observations{site,what}` how many findings
///   back them (sites with `learn: false` have none);
/// - `sessionkeeper_sites{state}`: sites in each state;
/// - `sessionkeeper_site_state{site,state}`: 1 for each site's current state, 0 for the other states it had since
///   the daemon started (so an alert on a state sees it end);
/// - `sessionkeeper_notifications_total{notifier,event,outcome}`: notifications by notifier (`notify[0]`), event
///   and outcome (`delivered`, `failed`, `dropped`);
/// - `sessionkeeper_socket_requests_total{route,status}`: requests answered on the socket;
/// - fleet mode: `sessionkeeper_store_reachable` (1 or 0), `sessionkeeper_leases_held`, and
///   `sessionkeeper_stale_writes_total` (session writes refused because another keeper took the site over);
/// - the egress families of ``EgressMetrics``.
final class DaemonMetrics: Sendable {
    /// Requests sent through the daemon (SPEC section 10).
    let egress: EgressMetrics
    private let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let requestCounters = Locked<[String: CoreMetrics.Counter]>([:])
    private let expiryGauges = Locked<[String: CoreMetrics.Gauge]>([:])
    /// Each site's state gauges, by state, for the states it has had.
    private let stateGauges = Locked<[String: [SiteSchedule.Phase: CoreMetrics.Gauge]]>([:])
    /// The learned-lifetime gauges, by site, then by `what/bound` (``recordLearned(_:)``).
    private let learnedGauges = Locked<[String: [String: CoreMetrics.Gauge]]>([:])
    /// The keeper's count of stale writes as far as the counter has it.
    private let staleWritesCounted = Locked(0)

    init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Logins take from a fraction of a second to a minute (slow SSO chains, plugins).
        factory.durationHistogramBuckets["sessionkeeper_login_duration_seconds"] = [
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
            .seconds(10), .seconds(30), .seconds(60),
        ]
        factory.durationHistogramBuckets[EgressMetrics.addedSeconds] = EgressMetrics.addedBuckets
        self.registry = registry
        self.factory = factory
        self.egress = EgressMetrics(factory: factory)
    }

    /// A login ended.
    func loginFinished(site: String, outcome: String, duration: Duration) {
        CoreMetrics.Counter(label: "sessionkeeper_logins_total", dimensions: [("site", site), ("outcome", outcome)], factory: factory)
            .increment()
        CoreMetrics.Timer(label: "sessionkeeper_login_duration_seconds", dimensions: [("site", site)], factory: factory)
            .recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// A check ended.
    func checkFinished(site: String, outcome: String) {
        CoreMetrics.Counter(label: "sessionkeeper_checks_total", dimensions: [("site", site), ("outcome", outcome)], factory: factory)
            .increment()
    }

    /// A request was answered. `route` is the route's pattern (`/v1/sites/{name}/cookies`), never a raw path, so
    /// the number of series stays bounded.
    func requestAnswered(route: String, status: Int) {
        requestCounter(route: route, status: status).increment()
    }

    /// The counter of requests answered on `route` with `status`, made once per pair; a caller that answers
    /// one kind of request many times keeps it.
    func requestCounter(route: String, status: Int) -> CoreMetrics.Counter {
        let key = "\(route) \(status)"
        return requestCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "sessionkeeper_socket_requests_total", dimensions: [("route", route), ("status", String(status))],
                factory: factory)
            counters[key] = counter
            return counter
        }
    }

    /// A notification to a notifier ended (delivered, failed for good, dropped from a full queue).
    func notificationEnded(notifier: String, event: String, outcome: String) {
        CoreMetrics.Counter(
            label: "sessionkeeper_notifications_total", dimensions: [("notifier", notifier), ("event", event), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    /// The Prometheus text, with the gauges set from the sites as they are now, and in fleet mode from the store.
    func render(_ sites: [Keeper.SiteStatus], fleet: FleetState? = nil, now: Date) -> String {
        if let fleet { recordFleet(fleet) }
        for phase in SiteSchedule.Phase.allCases {
            CoreMetrics.Gauge(label: "sessionkeeper_sites", dimensions: [("state", phase.rawValue)], factory: factory)
                .record(sites.filter { $0.phase == phase }.count)
        }
        expiryGauges.withLock { gauges in
            var current: Set<String> = []
            for site in sites {
                guard let expiresAt = site.expiresAt else { continue }
                current.insert(site.name)
                let gauge = gauges[site.name] ?? CoreMetrics.Gauge(
                    label: "sessionkeeper_session_expires_in_seconds", dimensions: [("site", site.name)], factory: factory)
                gauges[site.name] = gauge
                gauge.record(expiresAt.timeIntervalSince(now))
            }
            // A removed site, or one whose session lost its expiry, has no such series any more.
            for (name, gauge) in gauges where !current.contains(name) {
                gauge.destroy()
                gauges[name] = nil
            }
        }
        recordStates(sites)
        recordLearned(sites)
        return registry.emitToString()
    }

    /// `sessionkeeper_learned_seconds` and `sessionkeeper_learned_observations` from each site's learned values; the
    /// series of a bound no longer known (learning again), or of a site gone or not learning, go.
    private func recordLearned(_ sites: [Keeper.SiteStatus]) {
        learnedGauges.withLock { gauges in
            var current: [String: Set<String>] = [:]
            for site in sites {
                guard let learned = site.learned else { continue }
                var own = gauges[site.name] ?? [:]
                var kept: Set<String> = []
                for (what, bounds) in [("idle_timeout", learned.idle), ("lifetime", learned.lifetime)] {
                    var values: [(key: String, label: String, dimensions: [(String, String)], value: Double)] = [
                        ("\(what)/alive", "sessionkeeper_learned_seconds", [("site", site.name), ("what", what), ("bound", "alive")], bounds.atLeast),
                        ("\(what)/observations", "sessionkeeper_learned_observations", [("site", site.name), ("what", what)],
                         Double(bounds.observations)),
                    ]
                    if let dead = bounds.atMost {
                        values.append(("\(what)/dead", "sessionkeeper_learned_seconds", [("site", site.name), ("what", what), ("bound", "dead")], dead))
                    }
                    for value in values {
                        let gauge = own[value.key] ?? CoreMetrics.Gauge(label: value.label, dimensions: value.dimensions, factory: factory)
                        own[value.key] = gauge
                        gauge.record(value.value)
                        kept.insert(value.key)
                    }
                }
                for (key, gauge) in own where !kept.contains(key) {
                    gauge.destroy()
                    own[key] = nil
                }
                gauges[site.name] = own
                current[site.name] = kept
            }
            for (name, own) in gauges where current[name] == nil {
                for gauge in own.values { gauge.destroy() }
                gauges[name] = nil
            }
        }
    }

    /// `sessionkeeper_store_reachable` (1 or 0), `sessionkeeper_leases_held` and `sessionkeeper_stale_writes_total`.
    private func recordFleet(_ fleet: FleetState) {
        CoreMetrics.Gauge(label: "sessionkeeper_store_reachable", factory: factory).record(fleet.storeReachable ? 1 : 0)
        CoreMetrics.Gauge(label: "sessionkeeper_leases_held", factory: factory).record(fleet.leasesHeld)
        let added = staleWritesCounted.withLock { counted -> Int in
            defer { counted = max(counted, fleet.staleWrites) }
            return max(0, fleet.staleWrites - counted)
        }
        let counter = CoreMetrics.Counter(label: "sessionkeeper_stale_writes_total", factory: factory)
        if added > 0 { counter.increment(by: added) }
    }

    /// A site's state changed: its gauge for `to` is 1 and the others it had 0 at once, so a state that lasted
    /// less than a scrape interval (waiting-for-person answered quickly) still has its series.
    func stateChanged(site: String, to: SiteSchedule.Phase) {
        stateGauges.withLock { gauges in
            var own = gauges[site] ?? [:]
            for (phase, gauge) in own where phase != to { gauge.record(0) }
            stateGauge(site: site, phase: to, in: &own).record(1)
            gauges[site] = own
        }
    }

    private func stateGauge(site: String, phase: SiteSchedule.Phase, in own: inout [SiteSchedule.Phase: CoreMetrics.Gauge]) -> CoreMetrics.Gauge {
        if let gauge = own[phase] { return gauge }
        let gauge = CoreMetrics.Gauge(
            label: "sessionkeeper_site_state", dimensions: [("site", site), ("state", phase.rawValue)], factory: factory)
        own[phase] = gauge
        return gauge
    }

    /// `sessionkeeper_site_state`: 1 for each site's state now, 0 for the states it had before; a removed site's
    /// series go.
    private func recordStates(_ sites: [Keeper.SiteStatus]) {
        stateGauges.withLock { gauges in
            var current: Set<String> = []
            for site in sites {
                current.insert(site.name)
                var own = gauges[site.name] ?? [:]
                _ = stateGauge(site: site.name, phase: site.phase, in: &own)
                for (phase, gauge) in own { gauge.record(phase == site.phase ? 1 : 0) }
                gauges[site.name] = own
            }
            for (name, own) in gauges where !current.contains(name) {
                for gauge in own.values { gauge.destroy() }
                gauges[name] = nil
            }
        }
    }
}
