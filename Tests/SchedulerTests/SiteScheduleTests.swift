import Foundation
import Scheduler
import SiteConfig
import Testing

/// A test clock: both times move together unless a test makes the wall clock jump.
struct TestClock {
    var monotonic = ContinuousClock.now
    var wall = Date(timeIntervalSince1970: 1_750_000_000)

    var now: Now { Now(monotonic: monotonic, wall: wall) }

    mutating func advance(_ duration: Duration) {
        monotonic += duration
        wall = wall.addingTimeInterval(SiteScheduleTests.seconds(duration))
    }

    /// Moves to `instant` (a deadline), both clocks together.
    mutating func advance(to instant: ContinuousClock.Instant) {
        advance(monotonic.duration(to: instant))
    }

    func offset(_ instant: ContinuousClock.Instant?) -> Duration? { instant.map { monotonic.duration(to: $0) } }
}

@Suite struct SiteScheduleTests {
    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// No jitter, so every deadline is exact.
    static func policy(
        beforeExpiry: Duration = .seconds(600), maxAge: Duration? = nil, check: Duration? = .seconds(900),
        keepalive: Duration? = nil, canLogIn: Bool = true, maxFailuresPerDay: Int = 20
    ) -> SitePolicy {
        SitePolicy(
            canLogIn: canLogIn, beforeExpiry: beforeExpiry, maxAge: maxAge, checkEvery: check, keepaliveEvery: keepalive,
            retryInitial: .seconds(30), retryMax: .seconds(1800), maxFailuresPerDay: maxFailuresPerDay, jitter: 0)
    }

    static func session(_ clock: TestClock, expiresIn: Duration?, loggedInAgo: Duration = .zero) -> SessionSummary {
        SessionSummary(
            lastLogin: clock.wall.addingTimeInterval(-seconds(loggedInAgo)),
            expiresAt: expiresIn.map { clock.wall.addingTimeInterval(seconds($0)) })
    }

    /// A site that has just logged in successfully, session valid for `expiresIn`.
    static func loggedIn(
        _ clock: TestClock, policy: SitePolicy = policy(), expiresIn: Duration? = .seconds(3600)
    ) -> SiteSchedule {
        var schedule = SiteSchedule(policy: policy, seed: 1)
        // A restored session is checked at once when the site has a check; here it passes.
        if schedule.handle(.start(session: session(clock, expiresIn: expiresIn), enabled: true), now: clock.now) == [.check] {
            _ = schedule.handle(.checkFinished(.ok), now: clock.now)
        }
        return schedule
    }

    /// Ends a login with `outcome` and, when that starts the check of the new session, ends it with `check`.
    static func loginEnds(
        _ schedule: inout SiteSchedule, _ outcome: RunOutcome = .ok, session: SessionSummary?, check: RunOutcome = .ok, now: Now
    ) -> [SiteSchedule.Action] {
        let actions = schedule.handle(.loginFinished(outcome, session: session), now: now)
        guard actions == [.check] else { return actions }
        return schedule.handle(.checkFinished(check), now: now)
    }

    static let down = RunOutcome.siteDown(reason: "connect error", retryAfter: nil)

    // MARK: Start and restart

    /// A site's `refresh.retry` (with `max_failures_per_day`) and the daemon's jitter reach its policy.
    @Test func aSitesRetrySettingsReachItsPolicy() {
        let site = SiteDefinition(
            name: "wiki", file: "/sites/wiki.yaml", baseURL: URL(string: "https://wiki.example.com/")!, login: .manual,
            refresh: RefreshPolicy(retry: .init(initial: .seconds(5), max: .seconds(60), maxFailuresPerDay: 3)))
        let policy = SitePolicy(site: site, settings: SchedulerSettings(jitter: 0.25))
        #expect(policy.maxFailuresPerDay == 3)
        #expect(policy.retryInitial == .seconds(5))
        #expect(policy.retryMax == .seconds(60))
        #expect(policy.jitter == 0.25)
        #expect(!policy.canLogIn, "a manual site never logs in by itself")
        let unset = SitePolicy(site: SiteDefinition(name: "x", file: "/x.yaml", baseURL: URL(string: "https://x.example/")!, login: .manual),
                               settings: SchedulerSettings())
        #expect(unset.maxFailuresPerDay == SitePolicy.defaultMaxFailuresPerDay)
    }

    @Test func aRestartServesAValidSessionAndLogsNothingIn() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        let actions = schedule.handle(.start(session: Self.session(clock, expiresIn: .seconds(3600)), enabled: true), now: clock.now)
        // The restored session is checked at once (it may have been logged out while the daemon was down).
        #expect(actions == [.check])
        #expect(schedule.phase == .valid)
        #expect(schedule.handle(.checkFinished(.ok), now: clock.now).isEmpty)
        // expiry − before_expiry
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(3000))
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(900))
        #expect(schedule.nextLogin(now: clock.now) == clock.wall.addingTimeInterval(3000))
    }

    @Test func aSiteWithoutAValidSessionLogsInAtOnce() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.phase == .loggingIn)
        var expired = SiteSchedule(policy: Self.policy(), seed: 1)
        let stale = Self.session(clock, expiresIn: .seconds(-1))
        #expect(expired.handle(.start(session: stale, enabled: true), now: clock.now) == [.logIn])
        // A session (of an hour) that expires within before_expiry is valid but due: it is refreshed, not
        // logged in anew.
        var due = SiteSchedule(policy: Self.policy(), seed: 1)
        let ending = Self.session(clock, expiresIn: .seconds(60), loggedInAgo: .seconds(3540))
        #expect(due.handle(.start(session: ending, enabled: true), now: clock.now) == [.logIn])
        #expect(due.phase == .refreshing)
    }

    @Test func aDisabledSiteDoesNothing() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: false), now: clock.now).isEmpty)
        #expect(schedule.phase == .disabled)
        #expect(schedule.nextDeadline == nil)
        #expect(schedule.handle(.refreshRequested, now: clock.now).isEmpty)
    }

    // MARK: When to log in next

    @Test func maxAgeWinsWhenItComesFirst() {
        let clock = TestClock()
        let schedule = Self.loggedIn(clock, policy: Self.policy(maxAge: .seconds(1200)), expiresIn: .seconds(3600))
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(1200))
    }

    /// A 30-second session under the default before_expiry of 10 minutes is renewed halfway through its
    /// life, not at once after each login (which logged in 87 times in 2 s).
    @Test func aSessionShorterThanBeforeExpiryIsRenewedHalfwayNotAtOnce() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, expiresIn: .seconds(30))
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(15))
        clock.advance(.seconds(15))
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        clock.advance(.seconds(1))
        #expect(Self.loginEnds(&schedule, session: Self.session(clock, expiresIn: .seconds(30)), now: clock.now).isEmpty)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(15))
        // A login whose session was already over when it ended: retried after retry.initial (30 s), not at once.
        clock.advance(.seconds(15))
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        let over = SessionSummary(lastLogin: clock.wall, expiresAt: clock.wall.addingTimeInterval(-1))
        _ = Self.loginEnds(&schedule, session: over, now: clock.now)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(30))
    }

    @Test func theLoginTimerFiresAndASuccessPlansTheNextOne() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock)
        clock.advance(to: schedule.deadlines[.login]!)
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        #expect(schedule.phase == .refreshing)
        clock.advance(.seconds(2))
        let renewed = Self.session(clock, expiresIn: .seconds(7200))
        #expect(Self.loginEnds(&schedule, session: renewed, now: clock.now).isEmpty)
        #expect(schedule.phase == .valid)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(6600))
    }

    @Test func aSessionThatNeverExpiresIsRefreshedOnlyByItsCheckOrMaxAge() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, expiresIn: nil)
        #expect(schedule.deadlines[.login] == nil)
        clock.advance(to: schedule.deadlines[.check]!)
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(.ok), now: clock.now).isEmpty)
        #expect(schedule.phase == .valid)
        clock.advance(to: schedule.deadlines[.check]!)
        _ = schedule.handle(.timerFired(.check), now: clock.now)
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "status 401")), now: clock.now) == [.logIn])
        let withMaxAge = Self.loggedIn(clock, policy: Self.policy(maxAge: .seconds(43_200)), expiresIn: nil)
        #expect(clock.offset(withMaxAge.deadlines[.login]) == .seconds(43_200))
    }

    // MARK: Periods

    @Test func checkAndKeepaliveRunOnTheirOwnPeriods() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, policy: Self.policy(check: .seconds(900), keepalive: .seconds(120)))
        #expect(clock.offset(schedule.deadlines[.keepalive]) == .seconds(120))
        clock.advance(.seconds(120))
        #expect(schedule.handle(.timerFired(.keepalive), now: clock.now) == [.keepalive])
        // A sliding session comes back with a later expiry: the next login moves with it.
        let slid = Self.session(clock, expiresIn: .seconds(3600))
        #expect(schedule.handle(.keepaliveFinished(.ok, session: slid), now: clock.now).isEmpty)
        #expect(clock.offset(schedule.deadlines[.keepalive]) == .seconds(120))
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(3000))
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(780))
        // A timer that fires early (a spurious wakeup) does nothing.
        #expect(schedule.handle(.timerFired(.check), now: clock.now).isEmpty)
    }

    @Test func aKeepaliveThatFindsTheSessionGoneLogsIn() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, policy: Self.policy(keepalive: .seconds(60)))
        clock.advance(.seconds(60))
        _ = schedule.handle(.timerFired(.keepalive), now: clock.now)
        #expect(schedule.handle(.keepaliveFinished(.loggedOut(reason: "302 to /login"), session: nil), now: clock.now) == [.logIn])
        #expect(schedule.phase == .loggingIn)
    }

    // MARK: Site down

    @Test func whileTheSiteIsDownTheCookiesStayAndNoLoginIsTried() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, expiresIn: .seconds(1200))
        clock.advance(to: schedule.deadlines[.check]!)
        _ = schedule.handle(.timerFired(.check), now: clock.now)
        #expect(schedule.handle(.checkFinished(Self.down), now: clock.now).isEmpty)
        #expect(schedule.siteDown)
        #expect(schedule.phase == .valid)  // still served
        #expect(schedule.deadlines[.login] == nil)
        var delays: [Duration] = []
        for _ in 0..<4 {
            let deadline = schedule.deadlines[.check]!
            delays.append(clock.monotonic.duration(to: deadline))
            clock.advance(to: deadline)
            #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
            #expect(schedule.handle(.checkFinished(Self.down), now: clock.now).isEmpty)
        }
        #expect(delays == [.seconds(30), .seconds(60), .seconds(120), .seconds(240)])
        // The session expired meanwhile; when the site answers, the login comes at once.
        clock.advance(to: schedule.deadlines[.check]!)
        _ = schedule.handle(.timerFired(.check), now: clock.now)
        #expect(schedule.handle(.checkFinished(.ok), now: clock.now) == [.logIn])
        #expect(!schedule.siteDown)
    }

    @Test func aLoginThatFindsTheSiteDownProbesWithTheCheckNotAnotherLogin() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        #expect(schedule.handle(.loginFinished(Self.down, session: nil), now: clock.now).isEmpty)
        #expect(schedule.phase == .failed)
        #expect(schedule.deadlines[.login] == nil)
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(30))
        clock.advance(.seconds(30))
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "401")), now: clock.now) == [.logIn])
        // A site-down login does not count against max_failures_per_day.
        #expect(schedule.consecutiveFailures == 0)
    }

    // MARK: Rate limits

    @Test func a429WithRetryAfterIsHonouredByLoginsChecksAndRequestedRefreshes() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        let limited = RunOutcome.rateLimited(reason: "429", retryAfter: .seconds(300))
        #expect(schedule.handle(.loginFinished(limited, session: nil), now: clock.now).isEmpty)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(300))
        clock.advance(.seconds(10))
        #expect(schedule.handle(.refreshRequested, now: clock.now).isEmpty)
        #expect(schedule.handle(.checkRequested, now: clock.now).isEmpty)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(290))
        clock.advance(.seconds(290))
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
    }

    // MARK: Credentials refused

    @Test func refusedCredentialsNeedAttentionAfterOneAttemptUntilSomethingChanges() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        let refused = RunOutcome.credentialsRefused(reason: "site 'wiki', step 'submit': expectation failed")
        #expect(schedule.handle(.loginFinished(refused, session: nil), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        #expect(schedule.lastError == "site 'wiki', step 'submit': expectation failed")
        #expect(schedule.deadlines[.login] == nil)
        // With no session there is nothing to check: the site waits for a person, a day as a minute.
        #expect(schedule.nextDeadline == nil)
        clock.advance(.seconds(86_400))
        #expect(schedule.handle(.timerFired(.check), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        #expect(schedule.lastError == "site 'wiki', step 'submit': expectation failed")

        var bySecret = schedule
        #expect(bySecret.handle(.secretChanged, now: clock.now) == [.logIn])
        var byFile = schedule
        #expect(byFile.handle(.siteChanged(Self.policy(), enabled: true), now: clock.now) == [.logIn])
        var byRefresh = schedule
        #expect(byRefresh.handle(.refreshRequested, now: clock.now) == [.logIn])
        // A secret change means nothing to a healthy site.
        var healthy = Self.loggedIn(clock)
        #expect(healthy.handle(.secretChanged, now: clock.now).isEmpty)
    }

    /// The issue-25 case: `every: 2s` checks of a site whose only login was refused logged a warning each period.
    /// With no session, no check, keepalive or login runs however long the site waits; what brings it back plans them
    /// again.
    @Test func aSiteWaitingForAPersonWithNoSessionProbesNothing() {
        var clock = TestClock()
        let policy = Self.policy(check: .seconds(2), keepalive: .seconds(5))
        var schedule = SiteSchedule(policy: policy, seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.handle(.loginFinished(.credentialsRefused(reason: "refused"), session: nil), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        var actions: [SiteSchedule.Action] = []
        for _ in 0..<20 {
            clock.advance(.seconds(2))
            for timer in SiteSchedule.Timer.allCases { actions += schedule.handle(.timerFired(timer), now: clock.now) }
        }
        #expect(actions.isEmpty)
        #expect(schedule.nextDeadline == nil)
        // A changed secret logs in; its success plans the probes again.
        #expect(schedule.handle(.secretChanged, now: clock.now) == [.logIn])
        _ = Self.loginEnds(&schedule, session: Self.session(clock, expiresIn: .seconds(3600)), now: clock.now)
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(2))
        #expect(clock.offset(schedule.deadlines[.keepalive]) == .seconds(5))
    }

    /// A refused refresh leaves the old session served while it lasts: it is still checked, until the check finds
    /// it gone; from then on nothing is probed.
    @Test func aSiteWaitingForAPersonChecksItsSessionUntilItIsGone() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, policy: Self.policy(check: .seconds(60)))
        clock.advance(to: schedule.deadlines[.login]!)
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        _ = schedule.handle(.loginFinished(.credentialsRefused(reason: "refused"), session: nil), now: clock.now)
        #expect(schedule.phase == .needsAttention)
        // The check planned before the login is overdue by now.
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(.ok), now: clock.now).isEmpty)
        clock.advance(to: schedule.deadlines[.check]!)
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "401")), now: clock.now).isEmpty)
        #expect(schedule.lastError == "refused", "what the person must read stays")
        #expect(schedule.nextDeadline == nil)
        // A session another process stored (`sessionkeeper login`) is checked again.
        clock.advance(.seconds(600))
        _ = schedule.handle(.sessionStoredElsewhere(Self.session(clock, expiresIn: .seconds(3600))), now: clock.now)
        #expect(schedule.phase == .valid)
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(60))
    }

    @Test func aSessionStoredByAnotherProcessIsAdoptedAndClearsNeedsAttention() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        _ = schedule.handle(.loginFinished(.credentialsRefused(reason: "refused"), session: nil), now: clock.now)
        clock.advance(.seconds(60))
        let imported = Self.session(clock, expiresIn: .seconds(3600))
        #expect(schedule.handle(.sessionStoredElsewhere(imported), now: clock.now).isEmpty)
        #expect(schedule.phase == .valid)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(3000))
        // An older record is ignored.
        let older = SessionSummary(lastLogin: clock.wall.addingTimeInterval(-600), expiresAt: clock.wall.addingTimeInterval(60))
        #expect(schedule.handle(.sessionStoredElsewhere(older), now: clock.now).isEmpty)
        #expect(schedule.session == imported)
    }

    // MARK: Other failures

    @Test func otherFailuresBackOffExponentiallyUpToTheMaximumThenNeedAttention() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(maxFailuresPerDay: 9), seed: 1)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        var delays: [Duration] = []
        for attempt in 1...9 {
            #expect(schedule.handle(.loginFinished(.failed(reason: "plugin failed"), session: nil), now: clock.now).isEmpty)
            guard attempt < 9 else { break }
            #expect(schedule.phase == .failed)
            let deadline = schedule.deadlines[.login]!
            delays.append(clock.monotonic.duration(to: deadline))
            clock.advance(to: deadline)
            #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        }
        #expect(delays == [30, 60, 120, 240, 480, 960, 1800, 1800].map { Duration.seconds($0) })
        #expect(schedule.phase == .needsAttention)
        #expect(schedule.lastError?.contains("9 failed logins in 24 hours") == true)
    }

    @Test func jitterSpreadsDelaysWithinItsBounds() {
        let backoff = Backoff(initial: .seconds(100), max: .seconds(1000), jitter: 0.1)
        #expect(backoff.delay(afterFailures: 1, random: 0) == .seconds(90))
        #expect(backoff.delay(afterFailures: 1, random: 0.5) == .seconds(100))
        #expect(abs(Self.seconds(backoff.delay(afterFailures: 2, random: 1)) - 220) < 1e-9)
        #expect(backoff.delay(afterFailures: 60, random: 0.5) == .seconds(1000))
        var random = SplitMix64(seed: 7)
        for _ in 0..<1000 {
            let value = random.unit()
            #expect(value >= 0 && value < 1)
        }
    }

    @Test func onlyOneLoginPerSiteRunsWhoeverAsks() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: Self.policy(), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.handle(.refreshRequested, now: clock.now).isEmpty)
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "401")), now: clock.now).isEmpty)
        #expect(schedule.loginRunning)
    }

    /// A check falling due while a login runs would carry the session being replaced: it waits a period, and
    /// runs on its own schedule once the login ended.
    @Test func aCheckDueWhileALoginRunsWaitsAPeriod() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, policy: Self.policy(check: .seconds(60)))
        #expect(schedule.handle(.refreshRequested, now: clock.now) == [.logIn])
        clock.advance(to: schedule.deadlines[.check]!)
        #expect(schedule.handle(.timerFired(.check), now: clock.now).isEmpty)
        #expect(!schedule.checkRunning)
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(60))
        _ = Self.loginEnds(&schedule, session: Self.session(clock, expiresIn: .seconds(3600)), now: clock.now)
        clock.advance(to: schedule.deadlines[.check]!)
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
    }

    // MARK: Time

    @Test func aWallClockJumpReschedulesOnceWithoutABurst() {
        var clock = TestClock()
        var schedule = Self.loggedIn(clock, policy: Self.policy(check: .seconds(300)))
        // The wall clock jumps a day ahead (NTP after a long suspend): the session expired, by the wall.
        clock.wall = clock.wall.addingTimeInterval(86_400)
        clock.monotonic += .seconds(1)
        #expect(schedule.handle(.clockJumped, now: clock.now).isEmpty)
        let login = clock.offset(schedule.deadlines[.login])!
        #expect(login >= .zero && login <= .seconds(2))
        // Setting the wall clock never fires a monotonic timer by itself.
        #expect(schedule.handle(.timerFired(.check), now: clock.now).isEmpty)
        // And jumping back does not move the check either.
        let check = schedule.deadlines[.check]
        clock.wall = clock.wall.addingTimeInterval(-172_800)
        _ = schedule.handle(.clockJumped, now: clock.now)
        #expect(schedule.deadlines[.check] == check)
    }

    @Test func overdueChecksAfterASuspendAreSpreadOverOnePeriod() {
        var clock = TestClock()
        var schedules = (0..<50).map { index -> SiteSchedule in
            var schedule = SiteSchedule(policy: Self.policy(check: .seconds(300)), seed: UInt64(index))
            _ = schedule.handle(.start(session: Self.session(clock, expiresIn: .seconds(86_400)), enabled: true), now: clock.now)
            _ = schedule.handle(.checkFinished(.ok), now: clock.now)
            return schedule
        }
        clock.advance(.seconds(3600))  // a suspend: every check is overdue
        var offsets: [Duration] = []
        for index in schedules.indices {
            _ = schedules[index].handle(.clockJumped, now: clock.now)
            offsets.append(clock.offset(schedules[index].deadlines[.check])!)
        }
        #expect(offsets.allSatisfy { $0 >= .zero && $0 < .seconds(300) })
        #expect(Set(offsets).count > 40)
    }

    // MARK: Manual sites

    @Test func aManualSiteIsWatchedAndNeedsAttentionWhenItDies() {
        var clock = TestClock()
        var empty = SiteSchedule(policy: Self.policy(canLogIn: false), seed: 1)
        #expect(empty.handle(.start(session: nil, enabled: true), now: clock.now).isEmpty)
        #expect(empty.phase == .needsAttention)
        #expect(empty.nextDeadline == nil, "nothing to check until a session is imported")
        var schedule = Self.loggedIn(clock, policy: Self.policy(canLogIn: false))
        #expect(schedule.deadlines[.login] == nil)
        clock.advance(to: schedule.deadlines[.check]!)
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "401")), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        // An import brings it back.
        let imported = Self.session(clock, expiresIn: .seconds(3600))
        _ = schedule.handle(.sessionStoredElsewhere(imported), now: clock.now)
        #expect(schedule.phase == .valid)
    }
}

@Suite struct LoginGateTests {
    @Test func atMostMaxConcurrentLoginsRunInRequestOrder() {
        let now = ContinuousClock.now
        var gate = LoginGate(maxConcurrent: 2, perHostInterval: .zero)
        for site in ["a", "b", "c"] { gate.request(site: site, host: "\(site).test") }
        #expect(gate.admit(now: now) == ["a", "b"])
        #expect(gate.admit(now: now).isEmpty)
        gate.finish(site: "a")
        #expect(gate.admit(now: now) == ["c"])
        // Asking twice queues once.
        gate.request(site: "d", host: "d.test")
        gate.request(site: "d", host: "d.test")
        #expect(gate.waitingSites == ["d"])
    }

    @Test func loginsToOneHostKeepThePerHostInterval() {
        var now = ContinuousClock.now
        var gate = LoginGate(maxConcurrent: 8, perHostInterval: .seconds(1))
        gate.request(site: "one", host: "shared.test")
        gate.request(site: "two", host: "shared.test")
        gate.request(site: "other", host: "other.test")
        #expect(gate.admit(now: now) == ["one", "other"])
        gate.finish(site: "one")
        #expect(gate.admit(now: now).isEmpty)
        #expect(gate.nextAdmission() == now + .seconds(1))
        now += .milliseconds(999)
        #expect(gate.admit(now: now).isEmpty)
        now += .milliseconds(1)
        #expect(gate.admit(now: now) == ["two"])
    }

    /// With per_host_interval 0 a host takes logins up to max_concurrent at once; with an interval, one
    /// at a time, and a site held back lets later sites of other hosts pass.
    @Test func politenessHoldsOneHostWithoutHoldingOthers() {
        let now = ContinuousClock.now
        var open = LoginGate(maxConcurrent: 3, perHostInterval: .zero)
        for site in ["a", "b", "c", "d"] { open.request(site: site, host: "sso.test") }
        #expect(open.admit(now: now) == ["a", "b", "c"])
        var polite = LoginGate(maxConcurrent: 3, perHostInterval: .seconds(1))
        for site in ["a", "b"] { polite.request(site: site, host: "sso.test") }
        polite.request(site: "x", host: "other.test")
        #expect(polite.admit(now: now) == ["a", "x"])
        polite.finish(site: "a")
        #expect(polite.admit(now: now + .milliseconds(500)).isEmpty)
        #expect(polite.nextAdmission() == now + .seconds(1))
        #expect(polite.admit(now: now + .seconds(1)) == ["b"])
    }

    /// Ten thousand sites of one host, admitted and finished one after another: the queue stays in step
    /// (a site asking again after it finished waits once more, behind the others).
    @Test func manySitesOfOneHostPassInOrder() {
        let now = ContinuousClock.now
        var gate = LoginGate(maxConcurrent: 8, perHostInterval: .zero)
        for index in 0..<10_000 { gate.request(site: "s\(index)", host: "sso.test") }
        var order: [String] = []
        var running = gate.admit(now: now)
        while !running.isEmpty {
            order += running
            for site in running { gate.finish(site: site) }
            running = gate.admit(now: now)
        }
        #expect(order == (0..<10_000).map { "s\($0)" })
        #expect(gate.waitingSites.isEmpty && gate.runningCount == 0)
        gate.request(site: "s1", host: "sso.test")
        gate.request(site: "s2", host: "sso.test")
        gate.finish(site: "s1")  // removed while waiting
        gate.request(site: "s1", host: "sso.test")
        #expect(gate.waitingSites == ["s2", "s1"])
        #expect(gate.admit(now: now) == ["s2", "s1"])

        // With politeness, one host's ten thousand sites start one at a time, a second apart; a site removed
        // while it waits no longer counts for its host.
        var polite = LoginGate(maxConcurrent: 8, perHostInterval: .seconds(1))
        for index in 0..<10_000 { polite.request(site: "p\(index)", host: "sso.test") }
        polite.request(site: "lone", host: "lone.test")
        #expect(polite.admit(now: now) == ["p0", "lone"])
        polite.finish(site: "p0")
        polite.finish(site: "lone")
        #expect(polite.admit(now: now).isEmpty)
        #expect(polite.nextAdmission() == now + .seconds(1))
        #expect(polite.admit(now: now + .seconds(1)) == ["p1"])
        polite.finish(site: "p2")  // removed while waiting
        polite.finish(site: "p1")
        #expect(polite.admit(now: now + .seconds(2)) == ["p3"])
        #expect(polite.waitingSites.count == 9_996)
    }

    @Test func aRemovedSiteLeavesTheQueue() {
        var gate = LoginGate(maxConcurrent: 1, perHostInterval: .zero)
        gate.request(site: "a", host: "a.test")
        gate.request(site: "b", host: "b.test")
        gate.finish(site: "b")
        #expect(gate.admit(now: .now) == ["a"])
        #expect(gate.waitingSites.isEmpty)
    }
}
