/// What the daemon learned of a site's sessions, as the schedule acts on it (SPEC section 7, "Learned
/// lifetimes"): the learner (`LifetimeLearner` in Sessions) decides these, the schedule only plans by them.
/// Explicit settings win: `check.every` bounds the gap, and a `refresh.max_age` in the site file replaces the
/// learned renewal.
public struct LearnedTimings: Sendable, Hashable {
    /// The next check comes this long after the last use, when that is sooner than `check.every`: the learner
    /// explores, or keeps the session alive within the longest gap it survived. Planned only earlier, never
    /// later, by the jitter.
    public var checkGap: Duration?
    /// The gap is one the session was never seen to survive (exploring, refining): the check comes exactly then,
    /// with no jitter, since what it finds is measured against it.
    public var checkGapIsTrial: Bool
    /// Log in again this long after the last login (the oldest age a session was seen alive, once one was found
    /// dead of its age), unless the site sets `max_age`.
    public var renewAfter: Duration?

    public init(checkGap: Duration? = nil, checkGapIsTrial: Bool = false, renewAfter: Duration? = nil) {
        self.checkGap = checkGap
        self.checkGapIsTrial = checkGapIsTrial
        self.renewAfter = renewAfter
    }
}
