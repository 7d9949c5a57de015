/// Who may start a login now (SPEC section 2, `scheduler:`): at most `max_concurrent_logins` at once,
/// and, to one host, at least `per_host_interval` between two login starts and (while that interval is
/// not zero) one login at a time. Sites are admitted in the order they asked, except that one held back
/// by its host's politeness lets later sites of other hosts go first. A pure value: the driver asks it
/// with the current monotonic time.
///
/// Requests wait in one queue with a moving head, and the sites that wait are also kept in a dictionary:
/// asking, finishing and (when no politeness holds anyone back) admitting take constant time, so a daemon
/// starting ten thousand sites is not slowed by the ones still waiting.
public struct LoginGate: Sendable {
    public var maxConcurrent: Int
    public var perHostInterval: Duration

    /// One site's request, with the number that orders it among all requests.
    private struct Request: Sendable {
        var site: String
        var host: String
        var order: UInt64
    }

    private var running: [String: String] = [:]  // site → host
    private var runningPerHost: [String: Int] = [:]
    /// Site → the order and host of its live request. A queue entry whose order differs is stale (the site
    /// was admitted, finished or removed while waiting, and may have asked again since): it is skipped.
    private var waiting: [String: (order: UInt64, host: String)] = [:]
    /// Host → how many of its sites wait: lets an admission held back by politeness stop as soon as every
    /// waiting host is held back, and ``nextAdmission()`` look at hosts instead of every waiting site.
    private var waitingPerHost: [String: Int] = [:]
    private var queue: [Request] = []
    private var head = 0
    private var lastStart: [String: ContinuousClock.Instant] = [:]  // host → when its last login started
    private var nextOrder: UInt64 = 0

    public init(maxConcurrent: Int, perHostInterval: Duration) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.perHostInterval = perHostInterval
    }

    /// Logins running now.
    public var runningCount: Int { running.count }
    /// Sites waiting for their turn, oldest first.
    public var waitingSites: [String] { liveRequests.map(\.site) }

    /// `site` wants to log in to `host`; call ``admit(now:)`` to learn who may start.
    public mutating func request(site: String, host: String) {
        guard running[site] == nil, waiting[site] == nil else { return }
        nextOrder += 1
        waiting[site] = (nextOrder, host)
        waitingPerHost[host, default: 0] += 1
        queue.append(Request(site: site, host: host, order: nextOrder))
    }

    /// `site`'s login ended (or it was removed while waiting).
    public mutating func finish(site: String) {
        if let host = running.removeValue(forKey: site) {
            runningPerHost[host, default: 1] -= 1
            if runningPerHost[host] == 0 { runningPerHost[host] = nil }
        }
        // Its queue entry, if it still waited, goes stale.
        if let request = waiting.removeValue(forKey: site) { stopWaiting(request.host) }
    }

    /// The sites that may start now, in request order; they count as running from now on.
    public mutating func admit(now: ContinuousClock.Instant) -> [String] {
        var admitted: [String] = []
        var heldBack = Set<String>()
        var index = head
        while index < queue.count && running.count < maxConcurrent && heldBack.count < waitingPerHost.count {
            let request = queue[index]
            guard isLive(request) else {
                if index == head { head += 1 }
                index += 1
                continue
            }
            guard mayStart(request.host, now: now) else {
                heldBack.insert(request.host)
                index += 1
                continue
            }
            waiting[request.site] = nil
            stopWaiting(request.host)
            if index == head { head += 1 }
            running[request.site] = request.host
            runningPerHost[request.host, default: 0] += 1
            lastStart[request.host] = now
            admitted.append(request.site)
            index += 1
        }
        compact()
        return admitted
    }

    /// When a waiting site held back only by `per_host_interval` may start (nil: none is, or every wait
    /// ends with a running login).
    public func nextAdmission() -> ContinuousClock.Instant? {
        guard running.count < maxConcurrent else { return nil }
        guard perHostInterval > .zero else { return nil }
        return waitingPerHost.keys.compactMap { host -> ContinuousClock.Instant? in
            guard runningPerHost[host] == nil, let last = lastStart[host] else { return nil }
            return last + perHostInterval
        }.min()
    }

    // MARK: Queue

    private func isLive(_ request: Request) -> Bool { waiting[request.site]?.order == request.order }

    private mutating func stopWaiting(_ host: String) {
        waitingPerHost[host, default: 1] -= 1
        if waitingPerHost[host] == 0 { waitingPerHost[host] = nil }
    }

    /// Whether politeness lets a login to `host` start now.
    private func mayStart(_ host: String, now: ContinuousClock.Instant) -> Bool {
        guard perHostInterval > .zero else { return true }
        if runningPerHost[host] != nil { return false }
        if let last = lastStart[host], now < last + perHostInterval { return false }
        return true
    }

    private var liveRequests: [Request] { queue[head...].filter(isLive) }

    /// Drops the taken head, and rebuilds the queue when most of it is stale (sites admitted from behind
    /// a held-back one, or removed while waiting), so it never grows past twice what waits.
    private mutating func compact() {
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if queue.count - head > 64 && (queue.count - head) > 2 * waiting.count {
            queue = liveRequests
            head = 0
        } else if head > 64 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }
}
