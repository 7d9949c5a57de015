import Foundation
import Logging
import Scheduler
import Sessions
import SiteConfig

// MARK: Learned lifetimes (SPEC section 7): what each use of a session found, fed to the site's learner

extension Keeper {
    /// How cautiously every site's learner explores from now on (a benchmark that plays sites at speed shortens
    /// the first gap); sites added later start with them too.
    public func setLearnerSettings(_ settings: LifetimeLearner.Settings) {
        learnerSettings = settings
        for name in entries.keys {
            guard let learner = entries[name]?.learner else { continue }
            var replaced = LifetimeLearner(learned: learner.learned, settings: settings)
            if let login = learner.lastLogin { replaced.sessionRestored(lastLogin: login) }
            entries[name]?.learner = replaced
        }
    }

    /// The site's learner, starting from what the store holds (learned before a restart, or by another keeper),
    /// and watching the stored session from its login on; nil with `learn: false`.
    func makeLearner(for site: SiteDefinition, record: SessionRecord?) -> LifetimeLearner? {
        guard site.learn else { return nil }
        var learner = LifetimeLearner(learned: record?.learned ?? LearnedLifetimes(), settings: learnerSettings)
        if let record { learner.sessionRestored(lastLogin: record.lastLogin) }
        return learner
    }

    /// A site file that changed `learn:`: learning starts from what is stored, or stops.
    func relearnIfAsked(_ site: SiteDefinition) {
        guard let entry = entries[site.name], site.learn != (entry.learner != nil) else { return }
        entries[site.name]?.learner = makeLearner(for: site, record: entry.record)
    }

    /// Sets what the schedule plans by from what the learner knows at `now` (before each event it handles).
    func updateLearnedTimings(of name: String, now: Now) {
        guard let entry = entries[name] else { return }
        guard var learner = entry.learner else {
            if entry.schedule.learned != nil { entries[name]?.schedule.learn(nil, now: now) }
            return
        }
        if entry.schedule.following, learner.lastUse != nil {
            // Another keeper of the fleet holds the site and uses the session: this one's last use says nothing now.
            learner.lastUseUnknown()
            entries[name]?.learner = learner
        }
        var timings = LearnedTimings()
        if let every = entry.site.check?.every {
            let next = learner.nextUse(now: now.wall, longest: Double(every.components.seconds))
            timings.checkGap = .milliseconds(Int64((next.gap * 1000).rounded()))
            timings.checkGapIsTrial = next.trying
        }
        if let age = learner.renewalAge { timings.renewAfter = .milliseconds(Int64((age * 1000).rounded())) }
        if entry.schedule.learned != timings { entries[name]?.schedule.learn(timings, now: now) }
    }

    /// What a check or keepalive that started at `usedAt` found. A check that verifies a login just made says
    /// nothing of the session's life when it fails (the check is wrong), and a run that did not reach the site
    /// says nothing at all.
    func learn(from action: SiteSchedule.Action, outcome: RunOutcome, usedAt: Date, site name: String) {
        guard let schedule = entries[name]?.schedule else { return }
        let finding: LifetimeLearner.Finding
        switch (action, outcome) {
        case (.check, .ok): finding = .alive
        case (.keepalive, .ok): finding = .used
        case (_, .loggedOut):
            guard !(action == .check && schedule.checkVerifiesLogin) else { return }
            finding = .dead
        default: return
        }
        learn(finding, at: usedAt, site: name)
    }

    /// Feeds one finding to the site's learner; a change of its bounds is logged and stored with the session.
    func learn(_ finding: LifetimeLearner.Finding, at time: Date, site name: String) {
        guard var learner = entries[name]?.learner else { return }
        // A session whose essential cookies had expired by then died of its own `Expires`, which the schedule
        // already renews by: it says nothing of an idle timeout or a lifetime the site keeps (taken as one, a check
        // every second that met the expiry taught an idle timeout under a second, and the renewals it planned
        // logged in again and again).
        if finding == .dead, let expires = entries[name]?.record?.expiresAt, expires <= time { return }
        let change = learner.observe(finding, at: time)
        entries[name]?.learner = learner
        guard let change else { return }
        let learned = learner.learned
        let metadata: Logger.Metadata = [
            "site": "\(name)", "idle_timeout": "\(Self.boundsText(learned.idle))", "lifetime": "\(Self.boundsText(learned.lifetime))",
        ]
        switch change {
        case .survived:
            logger.debug("a session lived longer than seen before", metadata: metadata)
        case .narrowed:
            logger.info("learned how long sessions live", metadata: metadata)
        case .widened(let what):
            logger.notice("\(what)", metadata: metadata)
        }
        storeLearned(of: name)
    }

    /// This keeper's login made `record`: the session is watched from its login, its first use.
    func learnerSawLogin(of record: SessionRecord, site name: String) {
        entries[name]?.learner?.sessionStarted(at: record.lastLogin)
    }

    /// A session became the one served. One made elsewhere (a CLI login, another keeper of a fleet) is watched from
    /// its login, but when it was last used is unknown: its first finding tells only its age. What another keeper
    /// stored with it is taken when newer than what this keeper learned; what the record lacks of this keeper's
    /// learning is written back.
    func learn(from record: SessionRecord, site name: String) {
        guard var learner = entries[name]?.learner else { return }
        if learner.lastLogin != record.lastLogin, record.lastLogin > (learner.lastLogin ?? .distantPast) {
            learner.sessionRestored(lastLogin: record.lastLogin)
        }
        if let stored = record.learned, learner.adopt(stored) {
            logger.info("took what another process learned", metadata: [
                "site": "\(name)", "idle_timeout": "\(Self.boundsText(stored.idle))", "lifetime": "\(Self.boundsText(stored.lifetime))",
            ])
        }
        entries[name]?.learner = learner
        storeLearned(of: name)
    }

    /// Writes the site's learned values with its session when the stored record lacks them, this keeper may write
    /// it, and no login of its own runs (that login keeps what the store holds; its end calls this again).
    func storeLearned(of name: String) {
        guard let entry = entries[name], let learner = entry.learner, let record = entry.record,
              !(record.learned.map { $0.sameBounds(as: learner.learned) } ?? learner.learned.isEmpty),
              !entry.schedule.loginRunning, !entry.schedule.following, learningWrites[name] == nil,
              let path = loginPath(for: name)
        else { return }
        learningWrites[name] = Task { await self.writeLearned(of: name, through: path) }
    }

    /// Returns once no write of the site's learned values is in flight. A login waits for it before it starts: the
    /// write carries the session it started with, and landing after the login's own write it would put the old
    /// session back in the store, where the check of the new one reads it.
    func learnedWriteLanded(of name: String) async {
        await learningWrites[name]?.value
    }

    private func writeLearned(of name: String, through path: SiteLogin) async {
        defer { learningWrites[name] = nil }
        // A session that changed while the write ran (a keepalive's renewal) is written again with it, so the
        // write never puts older cookies back.
        for _ in 0..<3 {
            guard let learner = entries[name]?.learner, let base = entries[name]?.record,
                  !(base.learned.map { $0.sameBounds(as: learner.learned) } ?? false)
            else { return }
            var updated = base
            updated.learned = learner.learned
            do {
                try await path.store.save(updated, site: name)
            } catch where error.kind == .staleEpoch {
                staleWrite(site: name, error: error)
                return
            } catch {
                logger.error("cannot store what was learned", metadata: ["site": "\(name)", "error": "\(error)"])
                return
            }
            if entries[name]?.record == base {
                entries[name]?.record = updated
                publishBoard(name)
                return
            }
        }
    }

    /// `(15 s, 20 s] from 4 observations`, `over 40 s from 3 observations`, `unknown`.
    static func boundsText(_ bounds: LearnedLifetimes.Bounds) -> String {
        guard bounds.observations > 0 else { return "unknown" }
        let range = bounds.atMost.map { "(\(LifetimeLearner.text(bounds.atLeast)), \(LifetimeLearner.text($0))]" }
            ?? "over \(LifetimeLearner.text(bounds.atLeast))"
        return "\(range) from \(bounds.observations) observations"
    }
}
