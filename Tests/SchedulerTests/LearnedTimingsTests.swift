import Foundation
import Scheduler
import Testing

/// The schedule under what the daemon learned (SPEC section 7): the check comes within the learned gap, exactly
/// when the gap is a trial, only earlier by the jitter when it was survived; the learned renewal plans the login
/// unless the site sets `max_age`; `check.every` bounds the gap.
@Suite struct LearnedTimingsTests {
    static func policy(maxAge: Duration? = nil, jitter: Double) -> SitePolicy {
        SitePolicy(beforeExpiry: .seconds(600), maxAge: maxAge, checkEvery: .seconds(900), jitter: jitter)
    }

    @Test func aTrialGapIsExactAndASurvivedOneOnlyShorter() {
        var clock = TestClock()
        for (trial, jitter) in [(true, 0.1), (false, 0.1), (false, 0.0)] {
            var schedule = SiteScheduleTests.loggedIn(clock, policy: Self.policy(jitter: jitter), expiresIn: nil)
            schedule.learn(LearnedTimings(checkGap: .seconds(20), checkGapIsTrial: trial), now: clock.now)
            for _ in 0..<20 {
                clock.advance(to: schedule.deadlines[.check]!)
                #expect(schedule.handle(.timerFired(.check), now: clock.now) == [.check])
                _ = schedule.handle(.checkFinished(.ok), now: clock.now)
                let gap = SiteScheduleTests.seconds(clock.offset(schedule.deadlines[.check])!)
                if trial || jitter == 0 {
                    #expect(gap == 20, "trial \(trial): \(gap)")
                } else {
                    #expect(gap > 17.9 && gap <= 20, "\(gap)")
                }
            }
        }
    }

    @Test func checkEveryBoundsTheGap() {
        let clock = TestClock()
        var schedule = SiteScheduleTests.loggedIn(clock, policy: Self.policy(jitter: 0), expiresIn: nil)
        schedule.learn(LearnedTimings(checkGap: .seconds(3600), checkGapIsTrial: true), now: clock.now)
        _ = schedule.handle(.checkRequested, now: clock.now)
        _ = schedule.handle(.checkFinished(.ok), now: clock.now)
        #expect(clock.offset(schedule.deadlines[.check]) == .seconds(900))
    }

    @Test func theLearnedRenewalPlansTheLoginUnlessMaxAgeIsSet() {
        let clock = TestClock()
        var learning = SiteScheduleTests.loggedIn(clock, policy: Self.policy(jitter: 0), expiresIn: nil)
        #expect(learning.deadlines[.login] == nil, "a session without expiry or max_age has no planned login")
        learning.learn(LearnedTimings(renewAfter: .seconds(85)), now: clock.now)
        #expect(clock.offset(learning.deadlines[.login]) == .seconds(85), "planned at once, from the last login")

        var explicit = SiteScheduleTests.loggedIn(clock, policy: Self.policy(maxAge: .seconds(7200), jitter: 0), expiresIn: nil)
        explicit.learn(LearnedTimings(renewAfter: .seconds(85)), now: clock.now)
        #expect(clock.offset(explicit.deadlines[.login]) == .seconds(7200), "max_age wins")
    }
}
