import Foundation

// MARK: What `status` shows of a schedule: why it waits for a person, what runs next, how it backs off

extension SiteSchedule {
    /// What the check in flight is for.
    enum CheckPurpose: Sendable, Hashable {
        /// Its period came, a client reported a failure, or a person woke the site.
        case routine
        /// The session was restored at start: it may have been logged out while the daemon was down.
        case restoredSession
        /// A login just made the session: a failure means the check cannot pass.
        case afterLogin
    }


    /// The check in flight verifies the session a login just made: its failure says the check is wrong, not that
    /// the session died.
    public var checkVerifiesLogin: Bool { checkRunning && checkPurpose == .afterLogin }

    /// Consecutive failed attempts: logins that failed since the last success, plus, while the site is down,
    /// the runs it did not answer. 0 when nothing is failing.
    public var failures: Int { consecutiveFailures + (siteDown ? probeFailures : 0) }

    /// A run the schedule has planned: which, and when (wall time).
    public struct PlannedRun: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            /// A login (`refresh` in status: a first login, a renewal or a retry).
            case refresh
            case check
            case keepalive
        }

        public var kind: Kind
        public var at: Date

        public init(kind: Kind, at: Date) {
            self.kind = kind
            self.at = at
        }
    }

    /// The next run the schedule has planned, whichever comes first; nil when nothing is planned (a site that
    /// waits for a person with nothing to probe, a disabled site). On a tie the login is named.
    public func nextRun(now: Now) -> PlannedRun? {
        let order: [(Timer, PlannedRun.Kind)] = [(.login, .refresh), (.check, .check), (.keepalive, .keepalive)]
        var best: (deadline: ContinuousClock.Instant, kind: PlannedRun.Kind)?
        for (timer, kind) in order {
            guard let deadline = deadlines[timer] else { continue }
            if best.map({ deadline < $0.deadline }) ?? true { best = (deadline, kind) }
        }
        guard let best else { return nil }
        return PlannedRun(kind: best.kind, at: wallTime(of: best.deadline, now: now))
    }

    /// While failing (a failed login backing off, or the site down), when the next attempt is planned: the login's
    /// retry, or while the site is down the check that probes it first. Nil when nothing is failing or no
    /// attempt is planned (the site waits for a person).
    public func retryAt(now: Now) -> Date? {
        guard phase != .needsAttention, phase != .disabled else { return nil }
        let deadline: ContinuousClock.Instant?
        if siteDown {
            deadline = policy.checkEvery != nil ? deadlines[.check] ?? deadlines[.login] : deadlines[.login]
        } else if consecutiveFailures > 0 {
            deadline = deadlines[.login]
        } else {
            deadline = nil
        }
        return deadline.map { wallTime(of: $0, now: now) }
    }

    /// The wall time at which the monotonic clock reaches `deadline`, as far as anyone can tell now.
    func wallTime(of deadline: ContinuousClock.Instant, now: Now) -> Date {
        now.wall.addingTimeInterval(Self.seconds(now.monotonic.duration(to: deadline)))
    }
}
