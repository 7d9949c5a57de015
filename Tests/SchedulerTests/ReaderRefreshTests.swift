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

    /// Readers share one budget of logins (SPEC section 8): one per `refresh.min_interval` however many ask,
    /// even when every login succeeds; a manager's refresh is not counted against it.
    @Test func readersStartAtMostOneLoginPerMinInterval() {
        var clock = TestClock()
        var schedule = Tests.loggedIn(clock, policy: Tests.policy(check: nil))
        #expect(schedule.policy.readerLoginInterval == .seconds(60), "the default")
        #expect(schedule.handle(.readerRefreshRequested, now: clock.now) == [.logIn])
        clock.advance(.seconds(2))
        _ = schedule.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(3600))), now: clock.now)
        #expect(!schedule.loginRunning)
        for _ in 0..<57 {
            clock.advance(.seconds(1))
            #expect(schedule.handle(.readerRefreshRequested, now: clock.now).isEmpty)
        }
        let refusal = schedule.readerBudgetRefusal(clock.now)
        #expect(refusal == "readers may start one login per 1m (refresh.min_interval), and one started 59s ago", "\(refusal ?? "-")")
        var byManager = schedule
        #expect(byManager.handle(.refreshRequested, now: clock.now) == [.logIn], "a manager's refresh is not a reader's")
        clock.advance(.seconds(1))
        #expect(schedule.readerBudgetRefusal(clock.now) == nil)
        #expect(schedule.handle(.readerRefreshRequested, now: clock.now) == [.logIn])
    }

    /// The logins readers start count against the daily cap, `max_failures_per_day`, successful or not: past it,
    /// readers start none until the oldest is 24 hours old; the site's own schedule and managers go on.
    @Test func readersLoginsCountAgainstTheDailyCap() {
        var clock = TestClock()
        var policy = Tests.policy(check: nil, maxFailuresPerDay: 3)
        policy.readerLoginInterval = .seconds(10)
        var schedule = Tests.loggedIn(clock, policy: policy)
        var logins = 0
        // A reader asks every second for an hour; each login it starts succeeds after a second.
        for _ in 0..<3600 {
            if schedule.loginRunning {
                _ = schedule.handle(.loginFinished(.ok, session: Tests.session(clock, expiresIn: .seconds(86400 * 2))), now: clock.now)
            }
            clock.advance(.seconds(1))
            logins += schedule.handle(.readerRefreshRequested, now: clock.now).count
        }
        #expect(logins == 3)
        #expect(schedule.phase == .valid, "a reader's budget is not the site's health")
        #expect(schedule.readerBudgetRefusal(clock.now) == "readers started 3 logins in 24 hours, the daily cap (max_failures_per_day)")
        var byManager = schedule
        #expect(byManager.handle(.refreshRequested, now: clock.now) == [.logIn])
        clock.advance(.seconds(86400))
        #expect(schedule.handle(.readerRefreshRequested, now: clock.now) == [.logIn])
    }
}
