import Foundation

/// Learns how long a site's sessions live (SPEC section 7, "Learned lifetimes"), as a pure state machine: the
/// daemon tells it when the session was made, each use it made of it, and what each use found (alive, dead,
/// or nothing), with the time; it answers how long to wait before the next use, and at what age to log in
/// again. No clock of its own, no I/O.
///
/// The rule. A death found after a gap of no use that a session survived before cannot be the idle timeout: it
/// bounds the lifetime (the youngest age found dead "without such a gap"). Any other death bounds the idle
/// timeout (the shortest gap found dead): the gap was longer than any survived, which is what exploring tries.
/// A later finding that contradicts a bound (a session that survives a gap or an age found dead before) drops
/// that bound. A death that neither can explain (a gap survived before, at an age seen alive before) means the
/// site changed: what was learned is forgotten but this death, and learning starts again
/// (``Change/widened(_:)``).
///
/// Acting on it: with no death seen, the gap to the next use starts short and doubles at each survival
/// (exploring, bounded by `check.every`); once a death bounds the idle timeout, longer gaps are tried (halfway to
/// the shortest dead, at most ``Settings/refineRatio`` times the longest survived, so one more death ends it)
/// until the two are within that ratio, early in a session's life so that a death then is not its lifetime's;
/// then the session is used within the longest gap it survived. Once a death bounds the lifetime, a use is
/// placed at an older age the same way until those bounds are within ``Settings/lifetimeRatio``; then the
/// session is renewed at the oldest age seen alive.
public struct LifetimeLearner: Sendable, Hashable {
    /// How cautious exploration is.
    public struct Settings: Sendable, Hashable {
        /// The first gap a session with no evidence is left unused (seconds).
        public var firstGap: Double
        /// Each gap survived while exploring is followed by one this many times longer.
        public var growth: Double
        /// Refining stops once the shortest gap found dead is at most this many times the longest survived:
        /// using the session every survived gap then costs at most this many times the uses the true idle
        /// timeout needs.
        public var refineRatio: Double
        /// The same for the lifetime, closer: the session is renewed at the oldest age seen alive, so this is what
        /// renewing costs in logins over one per true lifetime.
        public var lifetimeRatio: Double
        /// No gap is shorter (seconds): a site that ends sessions faster is not kept by polling.
        public var shortestGap: Double
        /// The gap used to keep a session alive is this much shorter than the longest it survived: the daemon
        /// measures a gap from when its requests started, the server from when they arrived.
        public var margin: Double

        public init(
            firstGap: Double = 5, growth: Double = 2, refineRatio: Double = 1.4, lifetimeRatio: Double = 1.1, shortestGap: Double = 1,
            margin: Double = 0.05
        ) {
            self.margin = margin
            self.firstGap = firstGap
            self.growth = growth
            self.refineRatio = refineRatio
            self.lifetimeRatio = lifetimeRatio
            self.shortestGap = shortestGap
        }
    }

    /// What a use of the session found.
    public enum Finding: Sendable, Hashable {
        /// The site answered as to a logged-in client (a check that passed).
        case alive
        /// The site answered as to a logged-out client (a check that failed, an egress answer, a keepalive).
        case dead
        /// The session was used, and the answer says nothing of whether it lived (a keepalive that passed).
        case used
    }

    /// What a finding did to the bounds.
    public enum Change: Sendable, Hashable {
        /// A session survived longer (or older) than ever seen: a lower bound moved up.
        case survived
        /// A death bounded the idle timeout or the lifetime more closely (or for the first time).
        case narrowed
        /// A finding contradicted what was learned: bounds were dropped and learning starts again there; the
        /// text says what happened, for the log.
        case widened(String)
    }

    /// What was learned so far.
    public private(set) var learned: LearnedLifetimes
    public let settings: Settings
    /// When the session watched now was made; nil when none is (before a login, after a death).
    public private(set) var loginAt: Date?
    /// The login of the last session it was told of, dead or alive.
    public private(set) var lastLogin: Date?
    /// When the daemon last used it; nil when unknown (a session restored at start, used while no daemon ran).
    public private(set) var lastUse: Date?

    public init(learned: LearnedLifetimes = LearnedLifetimes(), settings: Settings = Settings()) {
        self.learned = learned
        self.settings = settings
    }

    // MARK: Events

    /// A login made a new session at `time` (a use too).
    public mutating func sessionStarted(at time: Date) {
        lastLogin = time
        loginAt = time
        lastUse = time
    }

    /// A session made by a login at `lastLogin` is taken over (restored at start): when it was last used is unknown,
    /// so its first finding tells only its age.
    public mutating func sessionRestored(lastLogin: Date) {
        self.lastLogin = lastLogin
        loginAt = lastLogin
        lastUse = nil
    }

    /// Someone else may use the session from now on (another keeper of a fleet took the site over): when it was
    /// last used is not known any more.
    public mutating func lastUseUnknown() {
        lastUse = nil
    }

    /// Takes what another process learned (another keeper of a fleet stored it), when it is newer than what this
    /// learner holds: learned again more often, or backed by more observations.
    /// - Returns: whether it was taken.
    @discardableResult
    public mutating func adopt(_ stored: LearnedLifetimes) -> Bool {
        guard Self.rank(stored) > Self.rank(learned) else { return false }
        learned = stored
        return true
    }

    private static func rank(_ learned: LearnedLifetimes) -> (Int, Int) {
        (learned.relearned, learned.idle.observations + learned.lifetime.observations)
    }

    /// A use of the session at `time` found `finding`.
    /// - Returns: how the bounds changed, nil when they did not.
    public mutating func observe(_ finding: Finding, at time: Date) -> Change? {
        guard let loginAt else { return nil }
        let age = max(0, time.timeIntervalSince(loginAt))
        let gap = lastUse.map { max(0, time.timeIntervalSince($0)) }
        switch finding {
        case .used:
            lastUse = time
            return nil
        case .alive:
            lastUse = time
            return sawAlive(gap: gap, age: age)
        case .dead:
            // Nothing more is learned of a dead session: the next one starts at its login.
            self.loginAt = nil
            lastUse = nil
            return foundDead(gap: gap, age: age)
        }
    }

    private mutating func sawAlive(gap: Double?, age: Double) -> Change? {
        var change: Change?
        if let gap {
            learned.idle.observations += 1
            if let dead = learned.idle.atMost, gap >= dead {
                learned.idle.atMost = nil
                change = .widened(
                    "a session lived through \(Self.text(gap)) without use, as long as or longer than the idle timeout learned "
                        + "(at most \(Self.text(dead))): learning the idle timeout again")
            }
            if gap > learned.idle.atLeast {
                learned.idle.atLeast = gap
                change = change ?? .survived
            }
        }
        learned.lifetime.observations += 1
        if let dead = learned.lifetime.atMost, age >= dead {
            learned.lifetime.atMost = nil
            change = .widened(
                "a session lived to \(Self.text(age)), as old as or older than the lifetime learned (at most \(Self.text(dead))): "
                    + "learning the lifetime again")
        }
        if age > learned.lifetime.atLeast {
            learned.lifetime.atLeast = age
            change = change ?? .survived
        }
        return change
    }

    private mutating func foundDead(gap: Double?, age: Double) -> Change? {
        // Unused for an unknown time (restored at start): the death says nothing certain of either bound.
        guard let gap else { return nil }
        let idleCannot = gap <= learned.idle.atLeast
        let lifetimeCannot = age <= learned.lifetime.atLeast
        if idleCannot && lifetimeCannot {
            let before = learned
            learned = LearnedLifetimes(
                idle: .init(atLeast: 0, atMost: max(gap, settings.shortestGap), observations: 1), relearned: before.relearned + 1)
            return .widened(
                "a session died after \(Self.text(gap)) without use at the age of \(Self.text(age)), earlier than what was learned allows "
                    + "(idle timeout over \(Self.text(before.idle.atLeast)), lifetime over \(Self.text(before.lifetime.atLeast))): "
                    + "the site changed; learning again")
        }
        if idleCannot {
            learned.lifetime.observations += 1
            guard age < (learned.lifetime.atMost ?? .infinity) else { return nil }
            learned.lifetime.atMost = age
            return .narrowed
        }
        learned.idle.observations += 1
        guard gap < (learned.idle.atMost ?? .infinity) else { return nil }
        learned.idle.atMost = max(gap, settings.shortestGap)
        return .narrowed
    }

    // MARK: Acting

    /// The next use that tells whether the session lives (a check): how long after `now` (seconds, never longer than
    /// `longest`, `check.every`), and whether it tries a gap or an age not known to be safe (exploring or refining:
    /// it must come exactly then) rather than one the session survived (which may come earlier).
    public func nextUse(now: Date, longest: Double) -> (gap: Double, trying: Bool) {
        // A session taken over (restored, or from another keeper) may have been idle for most of its timeout already.
        if loginAt != nil, lastUse == nil, learned.idle.isBounded { return (min(settings.shortestGap, longest), true) }
        var (gap, trying) = idleGap(now: now)
        // Refining the lifetime: the next use comes at the age tried, not after it.
        if let trial = lifetimeTrialAge, let loginAt {
            let age = now.timeIntervalSince(loginAt)
            if age < trial, trial - age <= gap {
                gap = trial - age
                trying = true
            }
        }
        if gap >= longest { return (longest, false) }
        return (max(settings.shortestGap, gap), trying)
    }

    private func idleGap(now: Date) -> (Double, Bool) {
        let survived = learned.idle.atLeast
        let safe = survived > 0 ? survived * (1 - settings.margin) : min(settings.firstGap, (learned.idle.atMost ?? .infinity) / 2)
        if let dead = learned.idle.atMost {
            guard survived == 0 || dead / survived > settings.refineRatio else { return (safe, false) }
            let trial = survived == 0 ? safe : Self.trial(survived, dead, ratio: settings.refineRatio)
            return fitsLifetime(trial, now: now) ? (trial, true) : (safe, survived == 0)
        }
        let trial = max(settings.firstGap, survived * settings.growth)
        return fitsLifetime(trial, now: now) || survived == 0 ? (trial, true) : (safe, false)
    }

    /// The value tried between `alive` and `dead`: halfway, but no more than `ratio` times `alive`, so that a death
    /// there ends the refining (the bounds are then within `ratio`) and refining costs at most one death.
    private static func trial(_ alive: Double, _ dead: Double, ratio: Double) -> Double {
        min((alive + dead) / 2, alive * ratio)
    }

    /// While the lifetime's bounds are further apart than ``Settings/lifetimeRatio``, the age tried next.
    private var lifetimeTrialAge: Double? {
        guard let dead = learned.lifetime.atMost else { return nil }
        let alive = learned.lifetime.atLeast
        guard alive == 0 || dead / alive > settings.lifetimeRatio else { return nil }
        return alive == 0 ? dead / 2 : Self.trial(alive, dead, ratio: settings.lifetimeRatio)
    }

    /// Whether a session used after `gap` from `now` is still younger than the oldest age seen alive, when the
    /// lifetime is bounded: a death then is its idle timeout's, not its lifetime's.
    private func fitsLifetime(_ gap: Double, now: Date) -> Bool {
        guard learned.lifetime.isBounded, let loginAt else { return true }
        return now.timeIntervalSince(loginAt) + gap < learned.lifetime.atLeast
    }

    /// The age at which to log in again (seconds after the login), once deaths bound the lifetime closely: the
    /// oldest age a session was seen alive, before any age one was found dead at. Nil while the lifetime is
    /// unbounded or still being refined (a use at the age tried tells more than a login then).
    public var renewalAge: Double? {
        guard learned.lifetime.isBounded, lifetimeTrialAge == nil else { return nil }
        return max(learned.lifetime.atLeast, settings.firstGap)
    }

    /// `90 s`, `1.5 s`, `12 min`: a learned duration for a log line.
    public static func text(_ seconds: Double) -> String {
        if seconds >= 120 { return "\(Int((seconds / 60).rounded())) min" }
        if seconds >= 10 { return "\(Int(seconds.rounded())) s" }
        return "\((seconds * 10).rounded() / 10) s"
    }
}
