import CookieJar
import Foundation
import HTTPTransport
import LoginFlow
import Logging
import Scheduler
import Sessions
import SiteConfig

// MARK: Runs: the logins, checks and keepalives the schedules ask for

extension Keeper {
    func start(_ action: SiteSchedule.Action, for name: String) {
        guard let site = entries[name]?.site else { return }
        guard mayAct(on: name) else {
            // The lease ended between two renewals: the site follows, and the run the schedule asked for ends unrun.
            if siteGate.holds(name) == true {
                loseLease(of: name, reason: "its deadline passed before a renewal")
            } else {
                dispatch(.leaseLost, to: name)
            }
            switch action {
            case .logIn:
                dispatch(.loginFinished(.cancelled, session: nil), to: name)
                resumeWaiters(of: name, loginEnded: true)
            case .check: dispatch(.checkFinished(.cancelled), to: name)
            case .keepalive: dispatch(.keepaliveFinished(.cancelled, session: nil), to: name)
            }
            return
        }
        switch action {
        case .logIn:
            gate.request(site: name, host: site.baseURL.host ?? "")
            admitLogins()
        case .check, .keepalive:
            // Unstructured: a run outlives this step of the actor; it is kept in the site's entry and cancelled with it.
            entries[name]?.runs[action] = Task { await self.probe(action, site: site) }
        }
    }

    func admitLogins() {
        guard !stopped else { return }
        for name in gate.admit(now: clock.now) {
            guard let site = entries[name]?.site else {
                gate.finish(site: name)
                continue
            }
            guard mayAct(on: name) else {
                loseLease(of: name, reason: "its deadline passed before a renewal")
                dropQueuedLogin(of: name)
                continue
            }
            // Unstructured: a run outlives this step of the actor; it is kept in the site's entry and cancelled with it.
            entries[name]?.runs[.logIn] = Task { await self.runLogin(site) }
        }
    }

    func runLogin(_ site: SiteDefinition) async {
        await learnedWriteLanded(of: site.name)
        let started = clock.now
        let outcome: RunOutcome
        var record: SessionRecord?
        var notice: String?
        guard let login = loginPath(for: site.name) else {
            loginEnded(site.name, outcome: .cancelled, record: nil, duration: clock.now - started)
            return
        }
        do {
            let result = try await login.run(site, events: Self.logging(logger), prompts: KeeperPrompts(keeper: self, site: site.name))
            record = result.record
            outcome = .ok
        } catch {
            switch error {
            case .flow(let flowError):
                outcome = RunOutcome.classify(flowError, run: .login, now: wallClock())
                notice = flowError.summary
            case .store(let storeError) where storeError.kind == .staleEpoch:
                staleWrite(site: site.name, error: storeError)
                outcome = .cancelled
            case .store(let storeError): outcome = .failed(reason: storeError.description)
            }
        }
        loginEnded(site.name, outcome: outcome, record: record, duration: clock.now - started, notice: notice)
    }

    /// - Parameter notice: the failure as a person may read it anywhere (``FlowError/summary``).
    func loginEnded(_ name: String, outcome: RunOutcome, record: SessionRecord?, duration: Duration, notice: String? = nil) {
        gate.finish(site: name)
        guard let entry = entries[name] else { return }
        entries[name]?.runs[.logIn] = nil
        if let record {
            learnerSawLogin(of: record, site: name)
            serve(record, site: name)
        }
        log("login", site: name, outcome: outcome, duration: duration)
        entries[name]?.lastAttempt = LoginAttempt(outcome: outcome, endedAt: wallClock())
        publish(.loginFinished(site: name, outcome: outcome.name, duration: duration))
        let summary = entries[name]?.record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        dispatch(.loginFinished(outcome, session: outcome == .ok ? summary : nil), to: name, notice: notice)
        storeLearned(of: name)
        resumeWaiters(of: name, loginEnded: true)
        admitLogins()
        rearm()
        // Unstructured: the store is read after this step, so that the login's end is planned before what it read.
        if storedDuringLogin.remove(name) != nil { Task { await self.lookAtStoredSession(of: name) } }
    }

    /// A check or keepalive with the stored cookies (read afresh: another process may have logged in).
    func probe(_ action: SiteSchedule.Action, site: SiteDefinition) async {
        let started = clock.now
        let usedAt = wallClock()
        var record = entries[site.name]?.record
        // Only a record that differs from the one served is news; the served one may have changed meanwhile
        // (cookies a client handed back) and must not be replaced by what this probe started with.
        var storedElsewhere: SessionRecord?
        if let stored = try? await login.store.load(site: site.name) {
            if stored != record { storedElsewhere = stored }
            record = stored
        }
        var outcome = RunOutcome.ok
        var notice: String?
        var renewed: SessionRecord?
        do {
            if action == .check {
                _ = try await login.check(site, session: record)
            } else {
                let (result, storage) = try await login.keepalive(site, session: record)
                // A sliding session's renewed cookies are the session now: keep and store them, and rewrite the
                // outputs as after a login.
                if let current = record {
                    renewed = await storeRenewal(
                        of: current, storage: storage, expiresAt: result.essentialCookies.compactMap(\.expires).min(),
                        site: site, now: result.finishedAt)
                }
            }
        } catch {
            outcome = RunOutcome.classify(error, run: action == .check ? .check : .keepalive, now: wallClock())
            notice = error.summary
        }
        probeEnded(
            action, site: site.name, outcome: outcome, record: renewed ?? storedElsewhere, duration: clock.now - started, notice: notice,
            usedAt: usedAt)
    }

    func probeEnded(
        _ action: SiteSchedule.Action, site name: String, outcome: RunOutcome, record: SessionRecord?, duration: Duration,
        notice: String? = nil, usedAt: Date? = nil
    ) {
        guard let entry = entries[name] else { return }
        entries[name]?.runs[action] = nil
        if let record { adopt(record, site: name) }
        if let usedAt { learn(from: action, outcome: outcome, usedAt: usedAt, site: name) }
        log(action == .check ? "check" : "keepalive", site: name, outcome: outcome, duration: duration)
        if action == .check { publish(.checkFinished(site: name, outcome: outcome.name, duration: duration)) }
        let summary = record.map { Self.summary($0, site: entry.site, now: wallClock()) }
        if action == .check {
            dispatch(.checkFinished(outcome), to: name, notice: notice)
        } else {
            dispatch(.keepaliveFinished(outcome, session: summary), to: name, notice: notice)
        }
        rearm()
    }

    /// The session after cookies changed without a login; stored and written to the outputs when it differs
    /// from `current`. Nil when nothing changed or it could not be stored (logged).
    func storeRenewal(
        of current: SessionRecord, storage: CookieStorage, expiresAt: Date?, site: SiteDefinition, now: Date
    ) async -> SessionRecord? {
        let cookies = SessionRecord.persistable(storage.allCookies, keepSessionCookies: site.cookies.persistSessionCookies, now: now)
        let updated = SessionRecord(
            cookies: cookies, lastLogin: current.lastLogin, expiresAt: expiresAt, userAgent: current.userAgent, origins: current.origins,
            oneTimeCodes: current.oneTimeCodes, learned: current.learned)
        guard (try? updated.encoded()) != (try? current.encoded()) else { return nil }
        guard let login = loginPath(for: site.name) else {
            logger.info("renewed cookies not stored: another keeper of the fleet holds the site's lease", metadata: ["site": "\(site.name)"])
            return nil
        }
        do {
            let failures = try await login.storeRenewal(
                updated, liveCookies: storage.allCookies.filter { !$0.isExpired(at: now) }, site: site)
            for failure in failures {
                logger.error("cannot write an output file", metadata: ["site": "\(site.name)", "error": "\(failure)"])
            }
            return updated
        } catch .store(let storeError) where storeError.kind == .staleEpoch {
            staleWrite(site: site.name, error: storeError)
            return nil
        } catch {
            logger.error("cannot store the renewed session", metadata: ["site": "\(site.name)", "error": "\(error)"])
            return nil
        }
    }

    func engine(for site: SiteDefinition) -> FlowEngine { login.engine(for: site) }

    // MARK: Helpers

    /// What the scheduler needs of a record: its times, and whether every essential cookie is there.
    static func summary(_ record: SessionRecord, site: SiteDefinition, now: Date) -> SessionSummary {
        let present = now < ServedBoard.essentialCookiesLiveUntil(site: site, record: record)
        return SessionSummary(lastLogin: record.lastLogin, expiresAt: record.expiresAt, essentialCookiesPresent: present)
    }

    /// What a login reports that belongs in the daemon's log (SPEC section 5: a plugin's standard error goes
    /// to the log, line by line, already masked by the engine; a flow's warnings, such as TLS verification
    /// off). Requests and steps are left to the one line per run.
    static func logging(_ logger: Logger) -> SessionEventSink {
        { event in
            guard case .flow(let flowEvent) = event else { return }
            switch flowEvent {
            case .pluginOutput(let site, let step, let line):
                logger.info("plugin: \(line)", metadata: ["site": "\(site)", "step": "\(step)"])
            case .warning(let site, let message):
                logger.warning("\(message)", metadata: ["site": "\(site)"])
            case .notice(let site, let step, let message):
                logger.info("\(message)", metadata: ["site": "\(site)", "step": "\(step)"])
            default:
                break
            }
        }
    }

    /// One line per run: site, what ran, outcome and duration, never a value.
    func log(_ what: String, site: String, outcome: RunOutcome, duration: Duration) {
        var metadata: Logger.Metadata = ["site": "\(site)", "run": "\(what)", "ms": "\(duration.wholeMilliseconds)", "outcome": "\(outcome.name)"]
        if let reason = outcome.reason { metadata["error"] = "\(reason)" }
        if outcome == .ok {
            logger.info("\(what) finished", metadata: metadata)
        } else {
            logger.warning("\(what) failed", metadata: metadata)
        }
    }
}
