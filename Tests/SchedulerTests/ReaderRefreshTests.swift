import Foundation
import Scheduler
import SiteConfig
import Testing

/// A reader's refresh (SPEC section 8, "Reading is not managing"): it starts a login only when the schedule
/// could start one itself, so a reader looping `refresh` can neither clear needs-attention, cut a backoff short
/// nor run past `max_failures_per_day`. A manager's refresh (``SiteSchedule/Event/refreshRequested``) does all
/// three.
@Suite struct ReaderRefreshTests {
    typealias Tests = SiteScheduleTests

    static let failed = RunOutcome.failed(reason: "site 'wiki', step 'submit': nothing matched the extraction")

    @Test func aReaderStartsALoginOfAHealthySiteOnceWhateverItsCallCount() {
        let clock = TestClock()
        var schedule = Tests.loggedIn(clock)
        #expect(schedule.acceptsReaderRefresh(clock.now))
        #expect(schedule.handle(.readerRefreshRequested, now: clock.now) == [.logIn])
        #expect(schedule.phase == .refreshing)
        // One login per site, whoever asks.
        #expect(schedule.handle(.readerRefreshRequested, now: clock.now).isEmpty)
    }

    @Test func aReaderWaitsOutTheBackoffAManagerMayCutShort() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Tests.policy(), seed: 1)
        #expect(schedule.handle(.start(session: nil, enabled: true), now: clock.now) == [.logIn])
        #expect(schedule.handle(.loginFinished(Self.failed, session: nil), now: clock.now).isEmpty)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(30))
        clock.advance(.seconds(10))
        #expect(!schedule.acceptsReaderRefresh(clock.now))
        #expect(schedule.handle(.readerRefreshRequested, now: clock.now).isEmpty)
        #expect(clock.offset(schedule.deadlines[.login]) == .seconds(20))
        #expect(!schedule.loginRunning)
        var byManager = schedule
        #expect(byManager.handle(.refreshRequested, now: clock.now) == [.logIn])
        clock.advance(.seconds(20))
        #expect(schedule.handle(.timerFired(.login), now: clock.now) == [.logIn])
    }

    @Test func aLoopingReaderGetsNoMoreLoginsThanTheDailyCapAndNeverClearsNeedsAttention() {
        var clock = TestClock()
        var schedule = SiteSchedule(policy: Tests.policy(maxFailuresPerDay: 3), seed: 1)
        var logins = schedule.handle(.start(session: nil, enabled: true), now: clock.now).count
        // The reader asks every second for two hours; the schedule's own timers fire when due.
        for _ in 0..<7200 {
            if schedule.loginRunning {
                _ = schedule.handle(.loginFinished(Self.failed, session: nil), now: clock.now)
            }
            clock.advance(.seconds(1))
            if let due = schedule.deadlines[.login], due <= clock.monotonic {
                logins += schedule.handle(.timerFired(.login), now: clock.now).count
            }
            logins += schedule.handle(.readerRefreshRequested, now: clock.now).count
        }
        #expect(logins == 3)
        #expect(schedule.phase == .needsAttention)
        #expect(schedule.lastError?.hasPrefix("3 failed logins in 24 hours") == true)
        // A manager's refresh is what clears it.
        #expect(schedule.handle(.refreshRequested, now: clock.now) == [.logIn])
    }

    @Test func aReaderStartsNothingForASiteDownRateLimitedManualOrDisabled() {
        var clock = TestClock()
        var down = SiteSchedule(policy: Tests.policy(), seed: 1)
        _ = down.handle(.start(session: nil, enabled: true), now: clock.now)
        _ = down.handle(.loginFinished(Tests.down, session: nil), now: clock.now)
        #expect(down.handle(.readerRefreshRequested, now: clock.now).isEmpty)

        var limited = Tests.loggedIn(clock)
        _ = limited.handle(.refreshRequested, now: clock.now)
        _ = limited.handle(.loginFinished(.rateLimited(reason: "429", retryAfter: .seconds(300)), session: nil), now: clock.now)
        clock.advance(.seconds(100))
        #expect(limited.handle(.readerRefreshRequested, now: clock.now).isEmpty)

        // A site that logs in by hand is not put to wait for a person by a reader.
        var manual = Tests.loggedIn(clock, policy: Tests.policy(canLogIn: false))
        #expect(manual.handle(.readerRefreshRequested, now: clock.now).isEmpty)
        #expect(manual.phase == .valid)

        var disabled = SiteSchedule(policy: Tests.policy(), seed: 1)
        _ = disabled.handle(.start(session: nil, enabled: false), now: clock.now)
        #expect(disabled.handle(.readerRefreshRequested, now: clock.now).isEmpty)
        #expect(disabled.phase == .disabled)
    }
}
