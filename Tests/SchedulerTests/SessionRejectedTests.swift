import Foundation
import Scheduler
import Testing

/// `sessionRejected`: a request sent through the daemon met an answer the site's `egress.logged_out` rule calls
/// logged out (SPEC section 10).
@Suite struct SessionRejectedTests {
    @Test func aRejectedSessionIsNotServedAndOneLoginStarts() {
        let clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock)
        #expect(schedule.session?.essentialCookiesPresent == true)
        #expect(schedule.handle(.sessionRejected(reason: "status 401"), now: clock.now) == [.logIn])
        #expect(schedule.loginRunning)
        #expect(schedule.session?.essentialCookiesPresent == false, "the rejected session is not served while the login runs")
        #expect(schedule.lastError == "status 401")
        // More answers like it join the login that runs.
        #expect(schedule.handle(.sessionRejected(reason: "status 401"), now: clock.now).isEmpty)
        // The new session is checked at once, as after every login of a site with a check.
        #expect(schedule.handle(.loginFinished(.ok, session: SiteScheduleTests.session(clock, expiresIn: .seconds(3600))), now: clock.now) == [.check])
        #expect(schedule.phase == .valid)
        #expect(schedule.session?.essentialCookiesPresent == true)
    }

    @Test func aSiteThatCannotLogInWaitsForAPerson() {
        let clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock, policy: SiteScheduleTests.policy(canLogIn: false))
        #expect(schedule.handle(.sessionRejected(reason: "status 401"), now: clock.now).isEmpty)
        #expect(schedule.phase == .needsAttention)
        #expect(!schedule.loginRunning)
        // A site that waits for a person is not logged in by answers.
        #expect(schedule.handle(.sessionRejected(reason: "status 401"), now: clock.now).isEmpty)
    }

    @Test func aSiteBackingOffKeepsItsPlannedAttempt() {
        var clock = TestClock()
        // No check: a site down retries its login (with a check it probes with the check first).
        var schedule = SiteScheduleTests.loggedIn(clock, policy: SiteScheduleTests.policy(check: nil))
        _ = schedule.handle(.refreshRequested, now: clock.now)
        _ = schedule.handle(.loginFinished(SiteScheduleTests.down, session: nil), now: clock.now)
        let planned = schedule.deadlines[.login]
        #expect(planned != nil)
        clock.advance(.seconds(1))
        #expect(schedule.handle(.sessionRejected(reason: "status 401"), now: clock.now).isEmpty)
        #expect(schedule.deadlines[.login] == planned)
        #expect(!schedule.loginRunning)
    }

    @Test func aDisabledSiteIgnoresIt() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: SiteScheduleTests.policy(), seed: 1)
        _ = schedule.handle(.start(session: SiteScheduleTests.session(clock, expiresIn: .seconds(3600)), enabled: false), now: clock.now)
        #expect(schedule.handle(.sessionRejected(reason: "status 401"), now: clock.now).isEmpty)
        #expect(schedule.phase == .disabled)
    }
}
