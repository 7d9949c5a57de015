import Foundation
import Scheduler
import Testing

/// The check as something the schedule can trust (SPEC section 7): a check that fails right after a successful
/// login is wrong, not the session; a restored session is checked at once; status says what runs next and how
/// a failing site backs off; an error that has been resolved leaves `last_error`.
@Suite struct CheckTrustTests {
    typealias Tests = SiteScheduleTests

    /// Every timer that is due fires, for `duration`, in steps of `step`; returns every action started.
    static func run(
        _ schedule: inout SiteSchedule, clock: inout TestClock, for duration: Duration, step: Duration = .seconds(1)
    ) -> [SiteSchedule.Action] {
        var actions: [SiteSchedule.Action] = []
        var elapsed = Duration.zero
        while elapsed < duration {
            clock.advance(step)
            elapsed += step
            for timer in SiteSchedule.Timer.allCases {
                for action in schedule.handle(.timerFired(timer), now: clock.now) {
                    actions.append(action)
                    // Every run the schedule starts ends at once: checks and keepalives pass, logins succeed.
                    switch action {
                    case .logIn: _ = schedule.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now)
                    case .check: _ = schedule.handle(.checkFinished(.ok), now: clock.now)
                    case .keepalive: _ = schedule.handle(.keepaliveFinished(.ok, session: nil), now: clock.now)
                    }
                }
            }
        }
        return actions
    }

    // MARK: A check that never passes

    /// The issue-26 case: a wrong `body_contains` made the daemon log in at every check period. The check runs at
    /// once after a login; failing then, it is the check that is wrong: needs-attention, saying so, and no login
    /// and no check over an hour of `every: 2s`, while the keepalive goes on keeping the session.
    @Test func aCheckThatFailsRightAfterALoginNeedsAttentionAndLogsInNoMore() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Tests.policy(check: .seconds(2), keepalive: .seconds(60)), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        clock.advance(.seconds(1))
        let session = Tests.session(clock, expiresIn: .seconds(86_400))
        #expect(schedule.handle(.loginFinished(.ok, session: session), now: clock.now) == [.check], "the new session is checked at once")
        #expect(schedule.phase == .valid)
        let found = "expected the body to contain 'Welcome back', found it without"
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: found)), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        #expect(schedule.attentionReason == .checkNeverPasses)
        #expect(schedule.lastError?.contains("the check is wrong") == true)
        #expect(schedule.lastError?.contains(found) == true, "what the check expected and found")
        #expect(schedule.deadlines[.login] == nil && schedule.deadlines[.check] == nil)

        var waiting = schedule
        let actions = Self.run(&waiting, clock: &clock, for: .seconds(3600))
        #expect(!actions.contains(.logIn) && !actions.contains(.check))
        #expect(actions.filter { $0 == .keepalive }.count == 60, "the session the login made is still kept alive")
        #expect(waiting.phase == .needsAttention)
        // A client's report asks for the check, which is known to be wrong: nothing runs.
        #expect(waiting.handle(.checkRequested, now: clock.now).isEmpty)

        // A session another process stored (`sessionkeeper login`) is served, but says nothing of the check.
        var stored = waiting
        #expect(stored.handle(.sessionStoredElsewhere(Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now).isEmpty)
        #expect(stored.attentionReason == .checkNeverPasses && stored.deadlines[.check] == nil && stored.deadlines[.login] == nil)

        // What a person does wakes it: a refresh logs in (and checks again); a changed file or secret checks
        // the session it has, whose failure then logs in once.
        var byRefresh = waiting
        #expect(byRefresh.handle(.refreshRequested, now: clock.now) == [.logIn])
        #expect(byRefresh.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now) == [.check])
        #expect(byRefresh.handle(.checkFinished(.loggedOut(reason: found)), now: clock.now).isEmpty)
        #expect(byRefresh.attentionReason == .checkNeverPasses)
        var byFile = waiting
        #expect(byFile.handle(.siteChanged(Tests.policy(check: .seconds(2)), enabled: true), now: clock.now) == [.check])
        #expect(byFile.phase == .valid)
        #expect(byFile.handle(.checkFinished(.ok), now: clock.now).isEmpty, "the fixed check passes")
        #expect(byFile.lastError == nil)
        #expect(clock.offset(byFile.deadlines[.check]) == .seconds(2))
        var bySecret = waiting
        #expect(bySecret.handle(.secretChanged, now: clock.now) == [.check])
        #expect(bySecret.handle(.checkFinished(.loggedOut(reason: found)), now: clock.now) == [.logIn])
    }

    /// A check that is already running when a login ends carries the old session: its answer says nothing of
    /// the new one, which is checked next; a failure of the old session's check then is not held against the check.
    @Test func aCheckInFlightWhenALoginEndsIsFollowedByACheckOfTheNewSession() {
        var clock = TestClock()
        var schedule = Tests.loggedIn(clock, policy: Tests.policy(check: .seconds(60)))
        clock.advance(.seconds(60))
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.refreshRequested, now: clock.now) == [.logIn])
        #expect(schedule.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now).isEmpty)
        #expect(schedule.handle(.checkFinished(.ok), now: clock.now) == [.check], "the new session's check")
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "401")), now: clock.now).isEmpty)
        #expect(schedule.attentionReason == .checkNeverPasses)
    }

    /// A routine check that fails long after the login is a logged-out session, as before: it logs in.
    @Test func aRoutineCheckFailureStillLogsIn() {
        var clock = TestClock()
        var schedule = Tests.loggedIn(clock, policy: Tests.policy(check: .seconds(60)))
        clock.advance(.seconds(60))
        #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "401")), now: clock.now) == [.logIn])
        #expect(schedule.attentionReason == nil)
        // A check the site does not answer right after a login says nothing of the check either.
        #expect(schedule.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now) == [.check])
        #expect(schedule.handle(.checkFinished(Tests.down), now: clock.now).isEmpty)
        #expect(schedule.phase == .valid && schedule.siteDown)
    }

    /// A site without a check has nothing to run after a login.
    @Test func aSiteWithoutACheckRunsNothingAfterItsLogin() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: Tests.policy(check: nil), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now).isEmpty)
        var restored = SiteSchedule(policy: Tests.policy(check: nil), seed: 1)
        #expect(restored.handle(.start(session: Tests.session(clock, expiresIn: .seconds(3600)), enabled: true), now: clock.now).isEmpty)
        #expect(restored.phase == .valid)
    }

    // MARK: A restored session

    /// SPEC 7: a session restored at start is checked at once; one logged out on the server while the daemon
    /// was down is no longer served and is replaced by a login.
    @Test func aRestoredSessionIsCheckedAtOnceAndALoggedOutOneIsReplaced() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: Tests.policy(check: .seconds(900)), seed: 1)
        #expect(schedule.handle(.start(session: Tests.session(clock, expiresIn: nil), enabled: true), now: clock.now) == [.check])
        #expect(schedule.phase == .valid)
        #expect(schedule.handle(.checkFinished(.loggedOut(reason: "status 401")), now: clock.now) == [.logIn])
        #expect(schedule.session?.essentialCookiesPresent == false, "no longer served as live")
        #expect(schedule.phase == .loggingIn)
        #expect(schedule.attentionReason == nil, "a restored session's failure is no verdict on the check")
    }

    // MARK: What status shows

    @Test func nextRunNamesTheEarliestPlannedRun() {
        var clock = TestClock()
        var schedule = Tests.loggedIn(clock, policy: Tests.policy(check: .seconds(900), keepalive: .seconds(120)))
        #expect(schedule.nextRun(now: clock.now) == .init(kind: .keepalive, at: clock.wall.addingTimeInterval(120)))
        var checks = Tests.loggedIn(clock, policy: Tests.policy(check: .seconds(900)))
        #expect(checks.nextRun(now: clock.now) == .init(kind: .check, at: clock.wall.addingTimeInterval(900)))
        let logins = Tests.loggedIn(clock, policy: Tests.policy(check: nil), expiresIn: .seconds(1200))
        #expect(logins.nextRun(now: clock.now) == .init(kind: .refresh, at: clock.wall.addingTimeInterval(600)))
        // While a check runs, its next time is not planned yet: the keepalive (or the login) is next.
        clock.advance(.seconds(120))
        #expect(schedule.handle(.timerFired(.keepalive), now: clock.now) == [.keepalive])
        #expect(schedule.nextRun(now: clock.now)?.kind == .check)
        _ = checks.handle(.refreshRequested, now: clock.now)
        _ = checks.handle(.loginFinished(.credentialsRefused(reason: "refused"), session: nil), now: clock.now)
        #expect(checks.nextRun(now: clock.now)?.kind == .check, "a waiting site still checks the session it has")
        var nothing = SiteSchedule(policy: Tests.policy(), seed: 1)
        _ = nothing.handle(.start(session: nil, enabled: false), now: clock.now)
        #expect(nothing.nextRun(now: clock.now) == nil)
    }

    @Test func failuresAndRetryAtDescribeTheBackoff() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Tests.policy(), seed: 1)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        #expect(schedule.failures == 0 && schedule.retryAt(now: clock.now) == nil)
        _ = schedule.handle(.loginFinished(.failed(reason: "plugin failed"), session: nil), now: clock.now)
        #expect(schedule.failures == 1)
        #expect(schedule.retryAt(now: clock.now) == clock.wall.addingTimeInterval(30))
        clock.advance(.seconds(30))
        _ = schedule.handle(.timerFired(.login), now: clock.now)
        _ = schedule.handle(.loginFinished(.failed(reason: "plugin failed"), session: nil), now: clock.now)
        #expect(schedule.failures == 2)
        #expect(schedule.retryAt(now: clock.now) == clock.wall.addingTimeInterval(60))
        clock.advance(.seconds(60))
        _ = schedule.handle(.timerFired(.login), now: clock.now)
        #expect(Tests.loginEnds(&schedule, session: Tests.session(clock, expiresIn: .seconds(3600)), now: clock.now).isEmpty)
        #expect(schedule.failures == 0 && schedule.retryAt(now: clock.now) == nil && schedule.lastError == nil)

        // The site down: the check probes it first; its attempts count.
        var down = Tests.loggedIn(clock, policy: Tests.policy(check: .seconds(60)))
        clock.advance(.seconds(60))
        _ = down.handle(.timerFired(.check), now: clock.now)
        _ = down.handle(.checkFinished(Tests.down), now: clock.now)
        #expect(down.failures == 1)
        #expect(down.retryAt(now: clock.now) == clock.wall.addingTimeInterval(30))
    }

    /// A keepalive that failed once and passes again leaves no error behind; a check's error is resolved by a
    /// passing check, not by a keepalive.
    @Test func aResolvedErrorLeavesLastError() {
        var clock = TestClock()
        var schedule = Tests.loggedIn(clock, policy: Tests.policy(check: .seconds(600), keepalive: .seconds(60)))
        clock.advance(.seconds(60))
        #expect(schedule.handle(.timerFired(.keepalive), now: clock.now) == [.keepalive])
        _ = schedule.handle(.keepaliveFinished(.failed(reason: "keepalive: status 418"), session: nil), now: clock.now)
        #expect(schedule.lastError == "keepalive: status 418")
        clock.advance(.seconds(60))
        #expect(schedule.handle(.timerFired(.keepalive), now: clock.now) == [.keepalive])
        _ = schedule.handle(.keepaliveFinished(.ok, session: nil), now: clock.now)
        #expect(schedule.lastError == nil)

        clock.advance(to: schedule.deadlines[.check]!)
        _ = schedule.handle(.timerFired(.check), now: clock.now)
        _ = schedule.handle(.checkFinished(.failed(reason: "check: redirect loop")), now: clock.now)
        // The keepalive planned at 180 s is overdue by now.
        #expect(schedule.handle(.timerFired(.keepalive), now: clock.now) == [.keepalive])
        _ = schedule.handle(.keepaliveFinished(.ok, session: nil), now: clock.now)
        #expect(schedule.lastError == "check: redirect loop", "a keepalive says nothing of the check")
        clock.advance(to: schedule.deadlines[.check]!)
        _ = schedule.handle(.timerFired(.check), now: clock.now)
        _ = schedule.handle(.checkFinished(.ok), now: clock.now)
        #expect(schedule.lastError == nil)
    }
}
