import Foundation
import SiteConfig

/// The timings and limits that decide one site's schedule (SPEC sections 3 and 7), taken out of its
/// definition so the state machine needs nothing else.
public struct SitePolicy: Sendable, Hashable {
    /// `max_failures_per_day` when the site sets none (SPEC section 3).
    public static let defaultMaxFailuresPerDay = RefreshPolicy.Retry.defaultMaxFailuresPerDay

    /// The site logs in by itself (steps or a plugin); false for `login: manual`.
    public var canLogIn: Bool
    /// Log in again this long before the first essential cookie expires.
    public var beforeExpiry: Duration
    /// And at least this often (nil: only expiry, checks and requests decide).
    public var maxAge: Duration?
    /// `check.every`, nil without a check.
    public var checkEvery: Duration?
    /// `keepalive.every`, nil without a keepalive.
    public var keepaliveEvery: Duration?
    /// First delay after a failure.
    public var retryInitial: Duration
    /// Largest delay after failures.
    public var retryMax: Duration
    /// Failed logins in 24 hours after which the site waits for a person.
    public var maxFailuresPerDay: Int
    /// Spread of every delay: 0.1 means ±10 % (`scheduler.jitter`), so sites never move in lockstep.
    public var jitter: Double
    /// The shortest time between two logins readers start (`refresh.min_interval`).
    public var readerLoginInterval: Duration

    public init(
        canLogIn: Bool = true, beforeExpiry: Duration = .seconds(600), maxAge: Duration? = nil,
        checkEvery: Duration? = nil, keepaliveEvery: Duration? = nil, retryInitial: Duration = .seconds(30),
        retryMax: Duration = .seconds(1800), maxFailuresPerDay: Int = SitePolicy.defaultMaxFailuresPerDay,
        jitter: Double = 0.1, readerLoginInterval: Duration = .seconds(60)
    ) {
        self.canLogIn = canLogIn
        self.beforeExpiry = beforeExpiry
        self.maxAge = maxAge
        self.checkEvery = checkEvery
        self.keepaliveEvery = keepaliveEvery
        self.retryInitial = retryInitial
        self.retryMax = retryMax
        self.maxFailuresPerDay = maxFailuresPerDay
        self.jitter = jitter
        self.readerLoginInterval = readerLoginInterval
    }

    /// The policy of a loaded site under the daemon's `scheduler:` settings.
    public init(site: SiteDefinition, settings: SchedulerSettings) {
        let canLogIn: Bool
        if case .manual = site.login { canLogIn = false } else { canLogIn = true }
        self.init(
            canLogIn: canLogIn, beforeExpiry: site.refresh.beforeExpiry, maxAge: site.refresh.maxAge,
            checkEvery: site.check?.every, keepaliveEvery: site.keepalive?.every,
            retryInitial: site.refresh.retry.initial, retryMax: site.refresh.retry.max,
            maxFailuresPerDay: site.refresh.retry.maxFailuresPerDay, jitter: settings.jitter,
            readerLoginInterval: site.refresh.minInterval)
    }
}

/// What the scheduler knows of a session: enough to plan, never a cookie.
public struct SessionSummary: Sendable, Hashable {
    /// When the login that made it finished (wall time).
    public var lastLogin: Date
    /// When the first essential cookie expires (wall time); nil when none expires.
    public var expiresAt: Date?
    /// Every essential cookie is present and unexpired.
    public var essentialCookiesPresent: Bool

    public init(lastLogin: Date, expiresAt: Date?, essentialCookiesPresent: Bool = true) {
        self.lastLogin = lastLogin
        self.expiresAt = expiresAt
        self.essentialCookiesPresent = essentialCookiesPresent
    }

    /// Usable at `now`: the essential cookies are there and the first of them has not expired.
    public func isValid(at now: Date) -> Bool {
        guard essentialCookiesPresent else { return false }
        guard let expiresAt else { return true }
        return expiresAt > now
    }
}

/// The two clocks every decision reads: monotonic time for timers (immune to the wall clock being set),
/// wall time for cookie expiry and `max_age`, which servers state in wall time.
public struct Now: Sendable, Hashable {
    public var monotonic: ContinuousClock.Instant
    public var wall: Date

    public init(monotonic: ContinuousClock.Instant, wall: Date) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// The monotonic instant at which the wall clock will read `date`, as far as anyone can tell now.
    public func monotonic(at date: Date) -> ContinuousClock.Instant {
        let seconds = date.timeIntervalSince(wall)
        // Duration.seconds(Double) traps on non-finite values; a date that far off is "never" anyway.
        guard seconds.isFinite, abs(seconds) < 1e12 else { return monotonic + .seconds(seconds > 0 ? 1e12 : -1e12) }
        return monotonic + .seconds(seconds)
    }
}
