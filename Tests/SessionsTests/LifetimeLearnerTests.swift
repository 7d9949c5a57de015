import Foundation
import Sessions
import Testing

/// The learner alone, on a made-up clock: each finding's effect on the bounds, and the gaps and renewals it asks for.
@Suite struct LifetimeLearnerTests {
    static let start = Date(timeIntervalSince1970: 1_750_000_000)

    /// Plays a server whose sessions die after `idle` seconds unused or `lifetime` seconds after login (nil: never),
    /// driven by the learner's own gaps and renewals, for `duration` seconds; returns the learner, the logins and the
    /// deaths found.
    static func play(idle: Double?, lifetime: Double?, for duration: Double, from learner: LifetimeLearner = LifetimeLearner())
        -> (learner: LifetimeLearner, logins: Int, deaths: Int)
    {
        var learner = learner
        var now = start
        var logins = 1
        var deaths = 0
        var login = now
        var lastUse = now
        learner.sessionStarted(at: now)
        _ = learner.observe(.alive, at: now)
        while now.timeIntervalSince(start) < duration {
            let gap = learner.nextUse(now: now, longest: 900).gap
            let renewAt = learner.renewalAge.map { login.addingTimeInterval($0) }
            if let renewAt, renewAt <= now.addingTimeInterval(gap) {
                now = max(now, renewAt)
                login = now
                lastUse = now
                logins += 1
                learner.sessionStarted(at: now)
                _ = learner.observe(.alive, at: now)
                continue
            }
            now = now.addingTimeInterval(gap)
            let dead = idle.map { now.timeIntervalSince(lastUse) >= $0 } == true || lifetime.map { now.timeIntervalSince(login) >= $0 } == true
            if dead {
                deaths += 1
                _ = learner.observe(.dead, at: now)
                login = now
                lastUse = now
                logins += 1
                learner.sessionStarted(at: now)
                _ = learner.observe(.alive, at: now)
            } else {
                lastUse = now
                _ = learner.observe(.alive, at: now)
            }
        }
        return (learner, logins, deaths)
    }

    @Test func withNoEvidenceTheGapStartsShortAndDoublesUpToCheckEvery() {
        var learner = LifetimeLearner()
        learner.sessionStarted(at: Self.start)
        var now = Self.start
        var gaps: [Double] = []
        for _ in 0..<10 {
            let next = learner.nextUse(now: now, longest: 900)
            gaps.append(next.gap)
            now = now.addingTimeInterval(next.gap)
            #expect(learner.observe(.alive, at: now) != nil || next.gap == 900)
        }
        #expect(Array(gaps.prefix(5)) == [5, 10, 20, 40, 80])
        #expect(gaps.last == 900, "bounded by check.every: \(gaps)")
        #expect(!learner.nextUse(now: now, longest: 900).trying, "at check.every it is the plain period")
    }

    @Test func aDeathAfterALongerGapBoundsTheIdleTimeoutAndOneAfterASurvivedGapTheLifetime() {
        var learner = LifetimeLearner()
        learner.sessionStarted(at: Self.start)
        #expect(learner.observe(.alive, at: Self.start.addingTimeInterval(10)) == .survived)
        #expect(learner.observe(.dead, at: Self.start.addingTimeInterval(40)) == .narrowed)
        #expect(learner.learned.idle == .init(atLeast: 10, atMost: 30, observations: 2))
        #expect(learner.learned.lifetime.atMost == nil, "a gap longer than any survived explains it")
        // A new session dies after a gap it survived before, older than ever seen: its lifetime.
        let second = Self.start.addingTimeInterval(100)
        learner.sessionStarted(at: second)
        #expect(learner.observe(.alive, at: second.addingTimeInterval(10)) == nil, "as long and as old as seen before")
        #expect(learner.observe(.alive, at: second.addingTimeInterval(20)) == .survived)
        #expect(learner.observe(.dead, at: second.addingTimeInterval(25)) == .narrowed)
        #expect(learner.learned.lifetime.atMost == 25 && learner.learned.lifetime.atLeast == 20)
        #expect(learner.learned.idle.atMost == 30, "the idle bound stands")
    }

    @Test func contradictionsWidenTheBoundsAndSaySo() {
        var learner = LifetimeLearner(learned: LearnedLifetimes(
            idle: .init(atLeast: 10, atMost: 20, observations: 4), lifetime: .init(atLeast: 60, atMost: 80, observations: 3)))
        learner.sessionStarted(at: Self.start)
        // The site lengthened its idle timeout: a gap of 25 s survived.
        guard case .widened(let longer)? = learner.observe(.alive, at: Self.start.addingTimeInterval(25)) else {
            Issue.record("a survived gap past the idle bound widens it")
            return
        }
        #expect(longer.contains("learning the idle timeout again"))
        #expect(learner.learned.idle.atMost == nil && learner.learned.idle.atLeast == 25)
        // The site shortened both: dead after 5 s unused at the age of 30 s, which nothing learned allows.
        _ = learner.observe(.alive, at: Self.start.addingTimeInterval(25))
        guard case .widened(let changed)? = learner.observe(.dead, at: Self.start.addingTimeInterval(30)) else {
            Issue.record("a death neither bound explains starts learning again")
            return
        }
        #expect(changed.contains("the site changed; learning again"), "\(changed)")
        #expect(learner.learned.relearned == 1)
        #expect(learner.learned.idle.atMost == 5 && learner.learned.idle.atLeast == 0 && learner.learned.lifetime.atMost == nil)
    }

    @Test func aRestoredSessionTellsItsAgeOnly() {
        var learner = LifetimeLearner()
        learner.sessionRestored(lastLogin: Self.start)
        #expect(learner.observe(.dead, at: Self.start.addingTimeInterval(3600)) == nil, "unused for an unknown time: nothing learned")
        learner.sessionRestored(lastLogin: Self.start)
        _ = learner.observe(.alive, at: Self.start.addingTimeInterval(50))
        #expect(learner.learned.idle.observations == 0 && learner.learned.lifetime.atLeast == 50)
    }

    @Test func anotherKeepersNewerLearningIsTakenAndAnOlderOneIsNot() {
        var learner = LifetimeLearner(learned: LearnedLifetimes(idle: .init(atLeast: 10, atMost: 20, observations: 4)))
        let older = learner.adopt(LearnedLifetimes(idle: .init(atLeast: 5, atMost: 30, observations: 2)))
        #expect(!older)
        let newer = learner.adopt(LearnedLifetimes(idle: .init(atLeast: 15, atMost: 20, observations: 9)))
        #expect(newer && learner.learned.idle.atLeast == 15)
        let relearned = learner.adopt(LearnedLifetimes(idle: .init(atLeast: 0, atMost: 8, observations: 1), relearned: 1))
        #expect(relearned, "learned again wins")
    }

    /// The issue's site (20 s idle, 90 s lifetime) and others: both bounds close in, few deaths, and in steady state
    /// no death, logins within one per lifetime, gaps within 1.5 times what the idle timeout needs.
    @Test(arguments: [(20.0, 90.0), (20.0, nil), (nil, 60.0), (45.0, 600.0), (7.0, 300.0)] as [(Double?, Double?)])
    func learnsAndThenKeepsTheSessionAlive(idle: Double?, lifetime: Double?) {
        let learning = Self.play(idle: idle, lifetime: lifetime, for: 1200)
        let learned = learning.learner.learned
        if let idle {
            #expect(learned.idle.atLeast < idle && (learned.idle.atMost ?? 0) >= idle, "\(learned)")
            #expect((learned.idle.atMost ?? 0) / learned.idle.atLeast <= 1.4 + 1e-9, "\(learned)")
        }
        if let lifetime, lifetime < 1200 {
            #expect(learned.lifetime.atLeast < lifetime && (learned.lifetime.atMost ?? 0) >= lifetime, "\(learned)")
        }
        #expect(learning.deaths <= 6, "\(learning.deaths) deaths while learning")
        let steady = Self.play(idle: idle, lifetime: lifetime, for: 3600, from: learning.learner)
        #expect(steady.deaths == 0, "no death once learned: \(steady.learner.learned)")
        if let lifetime { #expect(Double(steady.logins) <= 3600 / lifetime + 3) }
    }
}
