import Foundation
import Scheduler
import SiteConfig
import Testing

/// Fleet mode's side of the schedule (SPEC section 11): a site whose lease another keeper holds plans and starts
/// nothing and follows the sessions the holder stores; taking the lease plans from what the store holds.
@Suite struct LeaseScheduleTests {
    typealias T = SiteScheduleTests

    @Test func aFollowingSiteStartsNothingWhateverHappens() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(check: .seconds(60), keepalive: .seconds(30)), seed: 1, following: true)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now).isEmpty)
        #expect(schedule.phase == .loggingIn)
        #expect(schedule.lastError?.contains("another keeper") == true)
        for event: SiteSchedule.Event in [.refreshRequested, .checkRequested, .timerFired(.login), .clockJumped, .secretChanged] {
            #expect(schedule.handle(event, now: clock.now).isEmpty, "\(event)")
        }
        #expect(schedule.deadlines.isEmpty)
        #expect(!schedule.loginRunning)
    }

    @Test func aFollowingSiteServesTheHoldersNewerSession() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(), seed: 1, following: true)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        let stored = T.session(clock, expiresIn: .seconds(3600))
        #expect(schedule.handle(.sessionStoredElsewhere(stored), now: clock.now).isEmpty)
        #expect(schedule.phase == .valid && schedule.lastError == nil)
        #expect(schedule.session == stored)
        #expect(schedule.deadlines.isEmpty, "a follower plans no refresh of its own")
    }

    @Test func takingTheLeaseWithAValidSessionPlansWithoutALogin() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(check: nil), seed: 1, following: true)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        let stored = T.session(clock, expiresIn: .seconds(3600))
        #expect(schedule.handle(.leaseTaken(session: stored), now: clock.now).isEmpty)
        #expect(!schedule.following && schedule.phase == .valid)
        // The refresh is planned before the expiry, as for a session of its own.
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(3000))
        clock.advance(.seconds(3000))
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
    }

    @Test func takingTheLeaseWithoutASessionLogsIn() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(), seed: 1, following: true)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        #expect(schedule.handle(.leaseTaken(session: nil), now: clock.now) == [.logIn])
        #expect(schedule.loginRunning)
    }

    @Test func losingTheLeaseDropsEveryPlanAndARunsEndOnlyClearsItsFlag() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.handle(.leaseLost, now: clock.now).isEmpty)
        #expect(schedule.following && schedule.deadlines.isEmpty)
        // The cancelled login's end: no backoff, no failure counted.
        #expect(schedule.handle(.loginFinished(.cancelled, session: nil), now: clock.now).isEmpty)
        #expect(!schedule.loginRunning && schedule.consecutiveFailures == 0)
        // Taken again: it logs in, as nobody stored a session meanwhile.
        #expect(schedule.handle(.leaseTaken(session: nil), now: clock.now) == [.logIn])
    }

    @Test func aLeaseTakenTwiceIsNewsOnce() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(), seed: 1, following: true)
        _ = schedule.handle(.start(session: nil, enabled: true), now: clock.now)
        #expect(schedule.handle(.leaseTaken(session: nil), now: clock.now) == [.logIn])
        #expect(schedule.handle(.leaseTaken(session: nil), now: clock.now).isEmpty)
    }

    @Test func aDisabledSiteStaysDisabledWhenItsLeaseIsTaken() {
        let clock = TestClock()
        var schedule = SiteSchedule(policy: T.policy(), seed: 1, following: true)
        _ = schedule.handle(.start(session: nil, enabled: false), now: clock.now)
        #expect(schedule.phase == .disabled)
        #expect(schedule.handle(.leaseTaken(session: nil), now: clock.now).isEmpty)
        #expect(schedule.phase == .disabled)
    }
}
