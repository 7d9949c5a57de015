/// Who may start a login now (SPEC section 2, `scheduler:`): at most `max_concurrent_logins` at once,
/// and at least `per_host_interval` between two logins to one host, in the order they asked. A pure
/// value: the driver asks it with the current monotonic time.
public struct LoginGate: Sendable {
    public var maxConcurrent: Int
    public var perHostInterval: Duration

    private var running: [String: String] = [:]  // site → host
    private var waiting: [(site: String, host: String)] = []
    private var lastStart: [String: ContinuousClock.Instant] = [:]  // host → when its last login started

    public init(maxConcurrent: Int, perHostInterval: Duration) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.perHostInterval = perHostInterval
    }

    /// Logins running now.
    public var runningCount: Int { running.count }
    /// Sites waiting for their turn, oldest first.
    public var waitingSites: [String] { waiting.map(\.site) }

    /// `site` wants to log in to `host`; call ``admit(now:)`` to learn who may start.
    public mutating func request(site: String, host: String) {
        guard running[site] == nil, !waiting.contains(where: { $0.site == site }) else { return }
        waiting.append((site, host))
    }

    /// `site`'s login ended (or it was removed while waiting).
    public mutating func finish(site: String) {
        running[site] = nil
        waiting.removeAll { $0.site == site }
    }

    /// The sites that may start now, in request order; they count as running from now on.
    public mutating func admit(now: ContinuousClock.Instant) -> [String] {
        var admitted: [String] = []
        var index = 0
        while index < waiting.count && running.count < maxConcurrent {
            let candidate = waiting[index]
            let hostBusy = running.values.contains(candidate.host)
            let tooSoon = lastStart[candidate.host].map { now < $0 + perHostInterval } ?? false
            if hostBusy || tooSoon {
                index += 1
                continue
            }
            waiting.remove(at: index)
            running[candidate.site] = candidate.host
            lastStart[candidate.host] = now
            admitted.append(candidate.site)
        }
        return admitted
    }

    /// When a waiting site held back only by `per_host_interval` may start (nil: none is, or every wait
    /// ends with a running login).
    public func nextAdmission() -> ContinuousClock.Instant? {
        guard running.count < maxConcurrent else { return nil }
        return waiting.compactMap { entry -> ContinuousClock.Instant? in
            guard !running.values.contains(entry.host), let last = lastStart[entry.host] else { return nil }
            return last + perHostInterval
        }.min()
    }
}
