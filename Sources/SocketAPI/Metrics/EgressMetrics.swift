import CoreMetrics
import Locking
import Prometheus

/// The egress families of `GET /metrics`, labelled by site names and status classes, never by values:
/// - `sessionkeeper_egress_requests_total{site,status_class}`: proxied requests answered, by the class of the
///   site's status (`2xx` ... `5xx`), `error` when the site gave no answer;
/// - `sessionkeeper_egress_logged_out_total{site}`: answers the site's `egress.logged_out` rule called logged out;
/// - `sessionkeeper_egress_replays_total{site}`: requests sent again after the login that followed one;
/// - `sessionkeeper_egress_added_seconds{site}`: histogram of the time the daemon adds to a request over its
///   exchanges with the site and the waits for a login.
final class EgressMetrics: Sendable {
    static let addedSeconds = "sessionkeeper_egress_added_seconds"
    /// The daemon adds from tens of microseconds (a session at hand) to milliseconds (a cookie stored).
    static let addedBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(50), .milliseconds(250),
    ]

    private let factory: PrometheusMetricsFactory
    private let counters = Locked<[String: CoreMetrics.Counter]>([:])
    private let timers = Locked<[String: CoreMetrics.Timer]>([:])

    init(factory: PrometheusMetricsFactory) {
        self.factory = factory
    }

    /// A proxied request was answered with `status`, or (nil) not at all.
    func answered(site: String, status: Int?) {
        let statusClass = status.map { "\(min(max($0 / 100, 1), 5))xx" } ?? "error"
        counter("sessionkeeper_egress_requests_total", [("site", site), ("status_class", statusClass)]).increment()
    }

    func loggedOut(site: String) {
        counter("sessionkeeper_egress_logged_out_total", [("site", site)]).increment()
    }

    func replayed(site: String) {
        counter("sessionkeeper_egress_replays_total", [("site", site)]).increment()
    }

    func added(site: String, duration: Duration) {
        let timer = timers.withLock { timers in
            if let timer = timers[site] { return timer }
            let timer = CoreMetrics.Timer(label: Self.addedSeconds, dimensions: [("site", site)], factory: factory)
            timers[site] = timer
            return timer
        }
        timer.recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Counter {
        let key = ([label] + dimensions.map(\.1)).joined(separator: " ")
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory)
            counters[key] = counter
            return counter
        }
    }
}
