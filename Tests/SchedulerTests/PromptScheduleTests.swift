import Foundation
import Scheduler
import SiteConfig
import Testing

/// The schedule of sites whose login needs a person (SPEC section 12): the waiting-for-person phase, why a
/// site needs attention, and the login planned `refresh.before_expiry` ahead.
@Suite struct PromptScheduleTests {
    static let prompt = PromptRequest(name: "sms_code", message: "Code sent to the phone ending 42")

    /// A login that reaches a prompt waits for a person; the answer lets it go on, and its end leaves the phase.
    @Test func aLoginThatReachesAPromptWaitsForAPersonUntilItIsAnswered() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: SiteScheduleTests.policy(), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.phase == .loggingIn)
        #expect(schedule.handle(.promptWaiting(Self.prompt), now: clock.now).isEmpty)
        #expect(schedule.phase == .waitingForPerson)
        #expect(schedule.prompt == Self.prompt)
        clock.advance(.seconds(60))
        #expect(schedule.handle(.promptAnswered, now: clock.now).isEmpty)
        #expect(schedule.phase == .loggingIn)
        #expect(schedule.prompt == nil)
        let session = SiteScheduleTests.session(clock, expiresIn: .seconds(3600))
        // The new session is checked at once, as after every login of a site with a check.
        #expect(schedule.handle(.loginFinished(.ok, session: session), now: clock.now) == [.check])
        #expect(schedule.phase == .valid)
        #expect(schedule.attentionReason == nil)
    }

    /// A prompt announced when no login runs (a stale answer slot) changes nothing.
    @Test func aPromptWithoutARunningLoginIsIgnored() {
        let clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock)
        #expect(schedule.handle(.promptWaiting(Self.prompt), now: clock.now).isEmpty)
        #expect(schedule.phase == .valid)
        #expect(schedule.prompt == nil)
        #expect(schedule.handle(.promptAnswered, now: clock.now).isEmpty)
        #expect(schedule.phase == .valid)
    }

    /// Nobody answered: the site needs attention for that reason, the session it still has is served and
    /// checked, and no failure counts against the account (the daily cap is not reached by prompts).
    @Test func aPromptThatTimesOutNeedsAttentionWithoutCountingAFailure() {
        var clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock, policy: SiteScheduleTests.policy(maxFailuresPerDay: 1))
        clock.advance(to: schedule.deadlines[.login]!)
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        _ = schedule.handle(.promptWaiting(Self.prompt), now: clock.now)
        #expect(schedule.phase == .waitingForPerson)
        clock.advance(.seconds(300))
        let timedOut = RunOutcome.promptTimedOut(reason: "site 'wiki', step 'code': the prompt got no answer")
        #expect(schedule.handle(.loginFinished(timedOut, session: nil), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        #expect(schedule.attentionReason == .promptTimedOut)
        #expect(schedule.lastError == "site 'wiki', step 'code': the prompt got no answer")
        #expect(schedule.prompt == nil)
        #expect(schedule.deadlines[.check] != nil, "the session still valid is checked meanwhile")
        // A person asks again: the login runs (one failure would have reached the cap of 1).
        #expect(schedule.handle(.refreshRequested, now: clock.now) == [.logIn])
        #expect(schedule.attentionReason == nil)
    }

    /// While a login waits for a person, the session it replaces is still kept alive: a sliding session must not
    /// die during the wait.
    @Test func aKeepaliveRunsWhileALoginWaitsForAPerson() {
        var clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock, policy: SiteScheduleTests.policy(keepalive: .seconds(300)))
        clock.advance(to: schedule.deadlines[.login]!)
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        _ = schedule.handle(.promptWaiting(Self.prompt), now: clock.now)
        clock.advance(to: schedule.deadlines[.keepalive]!)
        #expect(schedule.handle(.timerFired(.keepalive), now: clock.now) == [.keepalive])
        #expect(schedule.phase == .waitingForPerson)
    }

    /// Each way to needs-attention carries its reason, and the reason goes with the phase.
    @Test func needsAttentionSaysWhy() {
        let clock = TestClock()
        var refused = SiteSchedule(policy: SiteScheduleTests.policy(), seed: 1)
        _ = refused.handle(.start(session: nil, enabled: true), now: clock.now)
        _ = refused.handle(.loginFinished(.credentialsRefused(reason: "refused"), session: nil), now: clock.now)
        #expect(refused.attentionReason == .credentialsRefused)
        _ = refused.handle(.secretChanged, now: clock.now)
        #expect(refused.phase != .needsAttention && refused.attentionReason == nil)

        var misconfigured = SiteSchedule(policy: SiteScheduleTests.policy(), seed: 1)
        _ = misconfigured.handle(.start(session: nil, enabled: true), now: clock.now)
        _ = misconfigured.handle(.loginFinished(.misconfigured(reason: "no such step"), session: nil), now: clock.now)
        #expect(misconfigured.attentionReason == .misconfigured)

        var capped = SiteSchedule(policy: SiteScheduleTests.policy(maxFailuresPerDay: 1), seed: 1)
        _ = capped.handle(.start(session: nil, enabled: true), now: clock.now)
        _ = capped.handle(.loginFinished(.failed(reason: "the page changed"), session: nil), now: clock.now)
        #expect(capped.phase == .needsAttention && capped.attentionReason == .dailyCapReached)

        var manual = SiteSchedule(policy: SiteScheduleTests.policy(canLogIn: false), seed: 1)
        _ = manual.handle(.start(session: nil, enabled: true), now: clock.now)
        #expect(manual.phase == .needsAttention && manual.attentionReason == .manualSessionDied)
    }

    /// SPEC section 12: a site that needs a person is logged in `refresh.before_expiry` ahead, so a person who
    /// answers within that time does so before clients see an expired session.
    @Test func aSiteThatNeedsAPersonIsLoggedInBeforeExpiryAhead() {
        var clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock, policy: SiteScheduleTests.policy(beforeExpiry: .seconds(900)))
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(3600 - 900))
        clock.advance(to: schedule.deadlines[.login]!)
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
        _ = schedule.handle(.promptWaiting(Self.prompt), now: clock.now)
        // The person answers just inside before_expiry: the session clients are served was valid all along.
        clock.advance(.seconds(899))
        #expect(schedule.session.map { $0.expiresAt! > clock.wall } == true)
        #expect(schedule.handle(.promptAnswered, now: clock.now).isEmpty)
        #expect(schedule.phase == .refreshing, "the old session is still valid while the login finishes")
    }
}
