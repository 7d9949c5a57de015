import Foundation
import SiteConfig

/// One site's schedule as a pure state machine (SPEC section 7): events in, actions out, no I/O and no
/// clock of its own. The daemon's driver feeds it what happened (a timer fired, a login finished, the
/// site file changed) with the current ``Now``, runs the actions it returns, and sleeps until
/// ``nextDeadline``.
///
/// Timers are kept in monotonic time, so setting the wall clock never fires or delays one; cookie expiry
/// and `max_age` are judged in wall time, and are translated into monotonic deadlines when planned (and
/// again after ``Event/clockJumped``).
public struct SiteSchedule: Sendable {
    /// The state shown by `status` and `GET /v1/sites` (SPEC section 8).
    public enum Phase: String, Sendable, Hashable, CaseIterable {
        case valid
        case loggingIn = "logging-in"
        case refreshing
        /// A login waits for a person's answer to a `prompt` step (SPEC section 12).
        case waitingForPerson = "waiting-for-person"
        case failed
        case needsAttention = "needs-attention"
        case disabled
    }

    /// The timers a site has.
    public enum Timer: Sendable, Hashable, CaseIterable {
        case login, check, keepalive
    }

    /// What the driver must start now.
    public enum Action: Sendable, Hashable {
        case logIn, check, keepalive
    }

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// The daemon started or the site was added; `session` is what the store holds (a valid one is checked at
        /// once when the site has a check).
        case start(session: SessionSummary?, enabled: Bool)
        /// A deadline of ``deadlines`` was reached.
        case timerFired(Timer)
        /// A login ended; `session` is the stored session after a successful one, which is checked at once when
        /// the site has a check (a check that fails then cannot pass: needs-attention).
        case loginFinished(RunOutcome, session: SessionSummary?)
        /// A `check` ended.
        case checkFinished(RunOutcome)
        /// A `keepalive` ended; a sliding session may come back with a later expiry.
        case keepaliveFinished(RunOutcome, session: SessionSummary?)
        /// Someone asked for a login (`refresh`, a socket client's `min_valid`): clears needs-attention.
        case refreshRequested
        /// A reader (a peer the site's `access` lets in, not a manager) asked for a login (SPEC section 8): it
        /// starts one only when the schedule itself could, so it never clears needs-attention, never cuts a
        /// backoff short and never runs past `max_failures_per_day`.
        case readerRefreshRequested
        /// A client reported a failed request: run the check now rather than a blind login.
        case checkRequested
        /// The site answered a request sent through the daemon (egress, SPEC section 10) as to a client logged
        /// out, by the site's `egress.logged_out`: the session is not served any more, and a login starts unless
        /// one runs, the site waits for a person, or it backs off (its planned attempt stands). `reason` says
        /// which answer (never a value).
        case sessionRejected(reason: String)
        /// The site file changed (its new policy): clears needs-attention and failure counts.
        case siteChanged(SitePolicy, enabled: Bool)
        /// A secret the site uses changed: clears needs-attention.
        case secretChanged
        /// Another process (a CLI `login` or `import`) stored a session for the site.
        case sessionStoredElsewhere(SessionSummary)
        /// The wall clock jumped or the machine was suspended: plan everything once more.
        case clockJumped
        /// The running login reached a `prompt` step and waits for a person's answer.
        case promptWaiting(PromptRequest)
        /// The waiting prompt was answered; the login goes on.
        case promptAnswered
        /// Fleet mode (SPEC section 11): this keeper took the site's lease; `session` is what the store holds
        /// now. The schedule plans and starts runs again from it.
        case leaseTaken(session: SessionSummary?)
        /// Fleet mode: another keeper holds the site's lease, or this keeper lost it. Nothing is planned or
        /// started until ``leaseTaken(session:)``: the schedule only follows the sessions the holder stores.
        case leaseLost
    }

    public private(set) var policy: SitePolicy
    public private(set) var phase: Phase = .failed
    /// What is known of the stored session.
    public private(set) var session: SessionSummary?
    /// When each timer fires (monotonic).
    public private(set) var deadlines: [Timer: ContinuousClock.Instant] = [:]
    /// The last failure's message (already free of secrets), nil after a success.
    public private(set) var lastError: String?
    /// Why the site needs a person, while it is ``Phase/needsAttention``.
    public private(set) var attentionReason: AttentionReason?
    /// The prompt the running login waits on, while the site is ``Phase/waitingForPerson``.
    public private(set) var prompt: PromptRequest?
    /// The last run could not reach the site: cookies are kept and served, no login is tried until it
    /// answers again.
    public private(set) var siteDown = false
    /// No request to the site before this (the server's `Retry-After`).
    public private(set) var notBefore: ContinuousClock.Instant?
    public private(set) var loginRunning = false
    public private(set) var checkRunning = false
    public private(set) var keepaliveRunning = false
    /// Failed logins since the last success (the backoff exponent).
    public private(set) var consecutiveFailures = 0
    /// Fleet mode: this keeper does not hold the site's lease; the schedule plans and starts nothing and
    /// follows the sessions the holder stores.
    public private(set) var following: Bool
    /// What was learned of the site's sessions, as timings (``learn(_:now:)``); nil with `learn: false`.
    public private(set) var learned: LearnedTimings?
    /// What the check in flight is for: its answer means more right after a login.
    var checkPurpose = CheckPurpose.routine
    /// A login succeeded while a check of the session it replaced was in flight: that check's answer is about
    /// the old session, and the new one is checked when it is in.
    var verificationDue = false
    /// Which kind of run set ``lastError``: a success of the same kind (or any login) resolves it.
    var lastErrorSource: RunKind?
    /// Unanswered checks while the site is down (their backoff exponent).
    var probeFailures = 0
    /// Wall times of failed logins, for `max_failures_per_day`.
    private var failureTimes: [Date] = []
    /// When the logins readers started began, within the last 24 hours (``readerBudgetRefusal(_:)``).
    private var readerLoginTimes: [ContinuousClock.Instant] = []
    private var random: SplitMix64

    /// - Parameter following: fleet mode: the site starts without its lease, following the holder's sessions
    ///   until ``Event/leaseTaken(session:)``.
    public init(policy: SitePolicy, seed: UInt64, following: Bool = false) {
        self.policy = policy
        self.random = SplitMix64(seed: seed)
        self.following = following
    }

    /// Takes what the learner says now. The check gap applies from the next check planned (the driver sets it before
    /// the event whose handling plans one: a check's end, a login's); a renewal age that changed plans the next login
    /// again at once, as the session planned before it was known would otherwise live on to its death.
    public mutating func learn(_ timings: LearnedTimings?, now: Now) {
        let renewalChanged = timings?.renewAfter != learned?.renewAfter
        learned = timings
        // A failed login's backoff keeps its planned retry.
        if renewalChanged, !following, !loginRunning, phase != .needsAttention, phase != .disabled, !siteDown, consecutiveFailures == 0 {
            planLogin(now: now)
        }
    }

    /// The earliest deadline, when the driver must wake up.
    public var nextDeadline: ContinuousClock.Instant? { deadlines.values.min() }

    /// When the next login is planned, in wall time (for `next_refresh`).
    public func nextLogin(now: Now) -> Date? {
        guard let deadline = deadlines[.login] else { return nil }
        return now.wall.addingTimeInterval(Self.seconds(now.monotonic.duration(to: deadline)))
    }

    /// Feeds one event; returns what to start now.
    public mutating func handle(_ event: Event, now: Now) -> [Action] {
        let actions = following || event.concernsLease ? follow(event, now: now) : apply(event, now: now)
        // What belongs to a phase goes with it, whichever transition left it.
        if phase != .needsAttention { attentionReason = nil }
        if phase != .waitingForPerson { prompt = nil }
        return actions
    }

    private mutating func apply(_ event: Event, now: Now) -> [Action] {
        switch event {
        case .start(let stored, let enabled):
            session = stored
            guard enabled else { return disable() }
            // Cookies without an expiry say nothing of a logout on the server while the daemon was down.
            return resume(now: now, checkAtOnce: .restoredSession)

        case .timerFired(let timer):
            guard deadlines[timer].map({ $0 <= now.monotonic }) ?? false else { return [] }
            deadlines[timer] = nil
            return fire(timer, now: now)

        case .loginFinished(let outcome, let stored):
            loginRunning = false
            return loginFinished(outcome, stored: stored, now: now)

        case .checkFinished(let outcome):
            checkRunning = false
            let purpose = checkPurpose
            checkPurpose = .routine
            if verificationDue {
                // The answer is about the session the login replaced: the new one is what must be checked.
                verificationDue = false
                return startCheck(.afterLogin, now: now)
            }
            return probeFinished(outcome, timer: .check, purpose: purpose, now: now)

        case .keepaliveFinished(let outcome, let stored):
            keepaliveRunning = false
            if let stored, outcome == .ok {
                session = stored
                planLogin(now: now)
            }
            return probeFinished(outcome, timer: .keepalive, purpose: .routine, now: now)

        case .refreshRequested:
            guard phase != .disabled else { return [] }
            if phase == .needsAttention { phase = sessionIsValid(now) ? .valid : .failed }
            return beginLogin(now: now)

        case .readerRefreshRequested:
            guard acceptsReaderRefresh(now), readerBudgetRefusal(now) == nil else { return [] }
            let actions = beginLogin(now: now)
            if actions.contains(.logIn) {
                readerLoginTimes.removeAll { $0.duration(to: now.monotonic) >= Self.day }
                readerLoginTimes.append(now.monotonic)
            }
            return actions

        case .checkRequested:
            guard phase != .disabled, policy.checkEvery != nil else { return [] }
            deadlines[.check] = nil
            return fire(.check, now: now)

        case .sessionRejected(let reason):
            return sessionRejected(reason, now: now)

        case .siteChanged(let newPolicy, let enabled):
            policy = newPolicy
            clearFailures()
            guard enabled else { return disable() }
            let waited = phase == .needsAttention
            if phase == .needsAttention || phase == .disabled { phase = sessionIsValid(now) ? .valid : .failed }
            deadlines = [:]
            // A site that waited for a person is woken by the change: its session (or its new check) is tried now.
            return resume(now: now, checkAtOnce: waited ? .routine : nil)

        case .secretChanged:
            guard phase == .needsAttention else { return [] }
            clearFailures()
            phase = sessionIsValid(now) ? .valid : .failed
            return resume(now: now, checkAtOnce: .routine)

        case .sessionStoredElsewhere(let stored):
            guard phase != .disabled else { return [] }
            if let current = session, current.lastLogin >= stored.lastLogin { return [] }
            session = stored
            guard stored.isValid(at: now.wall) else { return [] }
            // The session was never what was wrong: the new one is served, and the site waits on.
            guard !checkIsKnownWrong else { return [] }
            clearFailures()
            if !loginRunning { phase = .valid }
            planLogin(now: now)
            // Probes a site waiting for a person did without start again on the new session.
            for timer in [Timer.check, .keepalive] where deadlines[timer] == nil { planProbe(timer, now: now) }
            return []

        case .clockJumped:
            guard phase != .disabled else { return [] }
            return replanAfterJump(now: now)

        case .promptWaiting(let request):
            guard loginRunning, phase != .disabled else { return [] }
            prompt = request
            phase = .waitingForPerson
            return []

        case .promptAnswered:
            guard loginRunning, phase == .waitingForPerson else { return [] }
            phase = sessionIsValid(now) ? .refreshing : .loggingIn
            return []

        case .leaseTaken, .leaseLost:
            return follow(event, now: now)
        }
    }

    // MARK: Fleet mode

    /// The lease's events, and every event while another keeper holds the lease. Following, the schedule keeps
    /// its session, its policy and its runs' flags current, but plans no timer and starts no run; a valid
    /// session the holder stored ends a wait for a person here too.
    private mutating func follow(_ event: Event, now: Now) -> [Action] {
        switch event {
        case .leaseTaken(let stored):
            guard following else { return [] }
            following = false
            if let stored, stored.lastLogin >= (session?.lastLogin ?? .distantPast) { session = stored }
            guard phase != .disabled else { return [] }
            if phase == .needsAttention {
                // The attention this keeper asked for stays asked; its session is still checked and kept alive.
                if sessionIsValid(now) {
                    planProbe(.check, now: now)
                    planProbe(.keepalive, now: now)
                }
                return []
            }
            lastError = nil
            deadlines = [:]
            return resume(now: now)
        case .leaseLost:
            following = true
        case .start(let stored, let enabled):
            session = stored
            phase = enabled ? .failed : .disabled
        case .loginFinished(let outcome, let stored):
            loginRunning = false
            if outcome == .ok, let stored { session = stored }
        case .checkFinished:
            checkRunning = false
            checkPurpose = .routine
        case .keepaliveFinished(_, let stored):
            keepaliveRunning = false
            if let stored { session = stored }
        case .siteChanged(let newPolicy, let enabled):
            policy = newPolicy
            clearFailures()
            phase = enabled ? .failed : .disabled
        case .sessionStoredElsewhere(let stored):
            guard stored.lastLogin > (session?.lastLogin ?? .distantPast) else { break }
            session = stored
            if phase == .needsAttention, stored.isValid(at: now.wall) {
                clearFailures()
                phase = .failed
            }
        case .timerFired, .refreshRequested, .readerRefreshRequested, .checkRequested, .sessionRejected, .secretChanged,
             .clockJumped, .promptWaiting, .promptAnswered:
            break
        }
        deadlines = [:]
        if phase != .disabled && phase != .needsAttention {
            phase = sessionIsValid(now) ? .valid : .loggingIn
            lastError = phase == .valid ? nil : "another keeper of the fleet holds the site's lease; no valid session from it yet"
        }
        return []
    }

    // MARK: Transitions

    private mutating func disable() -> [Action] {
        phase = .disabled
        deadlines = [:]
        return []
    }

    /// From a known session: serve a valid one and plan its timers (with `checkAtOnce`, check it now when the
    /// site has a check), or log in.
    private mutating func resume(now: Now, checkAtOnce: CheckPurpose? = nil) -> [Action] {
        planProbe(.check, now: now)
        planProbe(.keepalive, now: now)
        if sessionIsValid(now) {
            if !loginRunning { phase = .valid }
            planLogin(now: now)
            if let deadline = deadlines[.login], deadline <= now.monotonic {
                deadlines[.login] = nil
                return beginLogin(now: now)
            }
            if let checkAtOnce { return startCheck(checkAtOnce, now: now) }
            return []
        }
        guard policy.canLogIn else {
            lastError = lastError ?? "no valid session: import one with `sessionkeeper import`"
            waitForPerson(.manualSessionDied, now: now)
            return []
        }
        return beginLogin(now: now)
    }

    /// Needs-attention: nothing logs the site in until a person acts (its file, a secret, a refresh, a session
    /// stored by another process). A session still valid is checked and kept alive meanwhile (unless the check
    /// is what is wrong); with none, a probe could only fail, and its warning each period would say nothing the
    /// state does not.
    private mutating func waitForPerson(_ reason: AttentionReason, now: Now) {
        phase = .needsAttention
        attentionReason = reason
        deadlines[.login] = nil
        if !sessionIsValid(now) {
            deadlines[.check] = nil
            deadlines[.keepalive] = nil
        }
        if reason == .checkNeverPasses { deadlines[.check] = nil }
    }

    /// Runs the check now (when the site has one and nothing holds it back), for `purpose`.
    private mutating func startCheck(_ purpose: CheckPurpose, now: Now) -> [Action] {
        guard policy.checkEvery != nil, !checkRunning else { return [] }
        deadlines[.check] = nil
        let actions = fire(.check, now: now)
        if checkRunning { checkPurpose = purpose }
        if deadlines[.check] == nil, !checkRunning { planProbe(.check, now: now) }
        return actions
    }

    private mutating func fire(_ timer: Timer, now: Now) -> [Action] {
        guard phase != .disabled else { return [] }
        if let notBefore, notBefore > now.monotonic {
            deadlines[timer] = notBefore
            return []
        }
        switch timer {
        case .login:
            guard phase != .needsAttention else { return [] }
            // While the site is down a login would only fail: probe with the check first.
            if siteDown && policy.checkEvery != nil { return fire(.check, now: now) }
            return beginLogin(now: now)
        case .check:
            guard !checkRunning, hasSessionToProbe(now), !checkIsKnownWrong else { return [] }
            // A check while a login runs would carry the session being replaced (none at all on the first
            // login) and tell nothing the login's outcome will not: it waits a period, as a keepalive does.
            guard !loginRunning else {
                planProbe(.check, now: now)
                return []
            }
            checkRunning = true
            return [.check]
        case .keepalive:
            guard hasSessionToProbe(now) else { return [] }
            // A login waiting for a person may wait for minutes: the session it replaces is still served, and a
            // sliding one must not die meanwhile.
            guard !keepaliveRunning, !siteDown, !loginRunning || phase == .waitingForPerson else {
                planProbe(.keepalive, now: now)
                return []
            }
            keepaliveRunning = true
            return [.keepalive]
        }
    }

    /// Starts a login unless one runs (one per site, whoever asks) or the server asked to wait.
    private mutating func beginLogin(now: Now) -> [Action] {
        guard !loginRunning else { return [] }
        guard policy.canLogIn else {
            waitForPerson(.manualSessionDied, now: now)
            return []
        }
        if let notBefore, notBefore > now.monotonic {
            deadlines[.login] = notBefore
            return []
        }
        deadlines[.login] = nil
        loginRunning = true
        phase = sessionIsValid(now) ? .refreshing : .loggingIn
        return [.logIn]
    }

    /// The site said the session is gone: as a check that found it logged out, without a check's timer.
    private mutating func sessionRejected(_ reason: String, now: Now) -> [Action] {
        guard phase != .disabled, phase != .needsAttention else { return [] }
        if var current = session {
            current.essentialCookiesPresent = false
            session = current
        }
        lastError = reason
        guard policy.canLogIn else {
            waitForPerson(.manualSessionDied, now: now)
            return []
        }
        if consecutiveFailures == 0, !siteDown { return beginLogin(now: now) }
        if !loginRunning { phase = .failed }
        return []
    }

    private mutating func loginFinished(_ outcome: RunOutcome, stored: SessionSummary?, now: Now) -> [Action] {
        switch outcome {
        case .ok:
            if let stored { session = stored }
            clearFailures()
            siteDown = false
            probeFailures = 0
            notBefore = nil
            lastError = nil
            lastErrorSource = nil
            phase = .valid
            planLogin(now: now)
            planProbe(.check, now: now)
            planProbe(.keepalive, now: now)
            // The new session is checked at once: a check that fails now says the check, not the session, is
            // wrong, which would otherwise turn into a login at every check period.
            guard policy.checkEvery != nil else { break }
            if checkRunning {
                verificationDue = true
                return []
            }
            return startCheck(.afterLogin, now: now)
        case .credentialsRefused(let reason), .misconfigured(let reason):
            failureTimes.append(now.wall)
            lastError = reason
            lastErrorSource = .login
            if case .credentialsRefused = outcome {
                waitForPerson(.credentialsRefused, now: now)
            } else {
                waitForPerson(.misconfigured, now: now)
            }
        case .promptTimedOut(let reason):
            // Not counted against the account: nothing was sent to the site for the missing answer.
            lastError = reason
            lastErrorSource = .login
            waitForPerson(.promptTimedOut, now: now)
        case .siteDown(let reason, let retryAfter):
            // Not counted against the account: the credentials never reached anyone.
            lastError = reason
            lastErrorSource = .login
            siteDown = true
            probeFailures += 1
            phase = sessionIsValid(now) ? .valid : .failed
            let delay = waitAfter(failures: probeFailures, retryAfter: retryAfter, now: now)
            if policy.checkEvery != nil {
                deadlines[.login] = nil
                deadlines[.check] = now.monotonic + delay
            } else {
                deadlines[.login] = now.monotonic + delay
            }
        case .rateLimited(let reason, let retryAfter):
            recordFailure(reason, now: now)
            if phase != .needsAttention {
                deadlines[.login] = now.monotonic + waitAfter(failures: consecutiveFailures, retryAfter: retryAfter, now: now)
            }
        case .failed(let reason), .loggedOut(let reason):
            recordFailure(reason, now: now)
            if phase != .needsAttention {
                deadlines[.login] = now.monotonic + waitAfter(failures: consecutiveFailures, retryAfter: nil, now: now)
            }
        case .cancelled:
            phase = sessionIsValid(now) ? .valid : .failed
            planLogin(now: now)
        }
        return []
    }

    private mutating func probeFinished(_ outcome: RunOutcome, timer: Timer, purpose: CheckPurpose, now: Now) -> [Action] {
        guard phase != .disabled else { return [] }
        // What put a site in needs-attention is what the person must read: later probes do not replace it.
        let keptError = phase == .needsAttention ? (lastError, lastErrorSource) : nil
        defer { if let keptError { (lastError, lastErrorSource) = keptError } }
        let kind: RunKind = timer == .keepalive ? .keepalive : .check
        if outcome != .ok, outcome != .cancelled { lastErrorSource = kind }
        switch outcome {
        case .ok:
            let wasDown = siteDown
            siteDown = false
            probeFailures = 0
            // Resolved: the site answers again, or the kind of run that failed now passes.
            if wasDown || lastErrorSource == kind {
                lastError = nil
                lastErrorSource = nil
            }
            planProbe(timer, now: now)
            if phase == .failed && policy.canLogIn && deadlines[.login] == nil { return beginLogin(now: now) }
            if wasDown { planLogin(now: now) }
            if let deadline = deadlines[.login], deadline <= now.monotonic { return fire(.login, now: now) }
            return []
        case .loggedOut(let reason) where purpose == .afterLogin:
            // The login that just ended made this session and said it was good: the check cannot pass.
            lastError = "the check fails right after a successful login, so the check is wrong, not the session: \(reason)"
            siteDown = false
            probeFailures = 0
            waitForPerson(.checkNeverPasses, now: now)
            return []
        case .loggedOut(let reason):
            lastError = reason
            siteDown = false
            probeFailures = 0
            if var current = session {
                current.essentialCookiesPresent = false
                session = current
            }
            planProbe(timer, now: now)
            guard phase != .needsAttention else { return [] }
            guard policy.canLogIn else {
                waitForPerson(.manualSessionDied, now: now)
                return []
            }
            return beginLogin(now: now)
        case .siteDown(let reason, let retryAfter), .rateLimited(let reason, let retryAfter):
            lastError = reason
            if case .siteDown = outcome {
                siteDown = true
                // No login until the site answers: the check's success plans it again.
                if policy.checkEvery != nil { deadlines[.login] = nil }
            }
            probeFailures += 1
            deadlines[timer] = now.monotonic + waitAfter(failures: probeFailures, retryAfter: retryAfter, now: now)
            return []
        case .credentialsRefused(let reason), .misconfigured(let reason), .failed(let reason), .promptTimedOut(let reason):
            lastError = reason
            planProbe(timer, now: now)
            return []
        case .cancelled:
            planProbe(timer, now: now)
            return []
        }
    }

    private mutating func replanAfterJump(now: Now) -> [Action] {
        // Overdue probes are spread over one period instead of all firing at once after a suspend.
        for timer in [Timer.check, .keepalive] {
            guard let deadline = deadlines[timer], deadline <= now.monotonic, let every = period(of: timer) else { continue }
            deadlines[timer] = now.monotonic + every * random.unit()
        }
        if !loginRunning && phase != .needsAttention && !siteDown {
            planLogin(now: now)
        }
        if let deadline = deadlines[.login], deadline <= now.monotonic {
            // Spread over the politeness window rather than logging every site in at once.
            deadlines[.login] = now.monotonic + Backoff.spread(.seconds(1), jitter: 1, random: random.unit())
        }
        return []
    }

    // MARK: Planning

    /// The next login: at the earliest of (first essential cookie's expiry − `before_expiry`) and
    /// (last login + `max_age`), moved earlier by up to `jitter` of `before_expiry` so sites that logged in
    /// together spread out. None when the session never expires and has no `max_age`.
    private mutating func planLogin(now: Now) {
        guard policy.canLogIn, let session, !loginRunning else {
            deadlines[.login] = nil
            return
        }
        var due: Date?
        var lead = Self.seconds(policy.beforeExpiry)
        if let expiresAt = session.expiresAt {
            let lifetime = expiresAt.timeIntervalSince(session.lastLogin)
            if lifetime > 0 {
                // A session shorter than twice before_expiry is renewed halfway through its life: renewing it
                // "before_expiry before it ends" would mean at once, and again at once after that login.
                lead = min(lead, lifetime / 2)
                due = expiresAt.addingTimeInterval(-lead)
            } else {
                // The login made a session that was already over: try again after retry.initial, not at once.
                lead = 0
                due = session.lastLogin.addingTimeInterval(Self.seconds(policy.retryInitial))
            }
        }
        if let maxAge = policy.maxAge {
            let byAge = session.lastLogin.addingTimeInterval(Self.seconds(maxAge))
            due = min(due ?? byAge, byAge)
        }
        if var chosen = due { chosen = chosen.addingTimeInterval(-lead * policy.jitter * random.unit()); due = chosen }
        if policy.maxAge == nil, let renew = learned?.renewAfter {
            // Before the learned lifetime ends; the jitter only moves it earlier, never past what was seen alive.
            let byLife = session.lastLogin.addingTimeInterval(Self.seconds(renew) * (1 - policy.jitter * random.unit()))
            due = min(due ?? byLife, byLife)
        }
        guard let due else {
            deadlines[.login] = nil
            return
        }
        let deadline = now.monotonic(at: due)
        deadlines[.login] = max(deadline, now.monotonic)
    }

    private mutating func planProbe(_ timer: Timer, now: Now) {
        guard let every = period(of: timer), hasSessionToProbe(now), timer != .check || !checkIsKnownWrong else {
            deadlines[timer] = nil
            return
        }
        if timer == .check, let gap = learned?.checkGap, gap < every {
            // A learned gap is one the session survived: the jitter only makes it shorter.
            let shortening = learned?.checkGapIsTrial == true ? 0 : policy.jitter * random.unit()
            deadlines[timer] = now.monotonic + .seconds(Self.seconds(gap) * (1 - shortening))
            return
        }
        deadlines[timer] = now.monotonic + Backoff.spread(every, jitter: policy.jitter, random: random.unit())
    }

    private func period(of timer: Timer) -> Duration? {
        switch timer {
        case .check: policy.checkEvery
        case .keepalive: policy.keepaliveEvery
        case .login: nil
        }
    }

    private mutating func recordFailure(_ reason: String, now: Now) {
        lastError = reason
        lastErrorSource = .login
        consecutiveFailures += 1
        failureTimes.append(now.wall)
        failureTimes.removeAll { now.wall.timeIntervalSince($0) >= 24 * 3600 }
        if failureTimes.count >= policy.maxFailuresPerDay {
            waitForPerson(.dailyCapReached, now: now)
            lastError = "\(failureTimes.count) failed logins in 24 hours (max_failures_per_day); last: \(reason)"
        } else {
            phase = sessionIsValid(now) ? .valid : .failed
        }
    }

    private mutating func clearFailures() {
        consecutiveFailures = 0
        failureTimes = []
        lastError = nil
        lastErrorSource = nil
    }

    /// The backoff delay, never shorter than the server's `Retry-After`, which also becomes a floor for
    /// every request to the site.
    private mutating func waitAfter(failures: Int, retryAfter: Duration?, now: Now) -> Duration {
        let backoff = Backoff(initial: policy.retryInitial, max: policy.retryMax, jitter: policy.jitter)
            .delay(afterFailures: max(1, failures), random: random.unit())
        guard let retryAfter else { return backoff }
        notBefore = now.monotonic + retryAfter
        return max(backoff, retryAfter)
    }

    private func sessionIsValid(_ now: Now) -> Bool { session?.isValid(at: now.wall) ?? false }

    /// Whether a reader's refresh may start a login now: the site logs in by itself, waits for no person, has
    /// no failed login or outage it is backing off from, and no `Retry-After` in force.
    public func acceptsReaderRefresh(_ now: Now) -> Bool {
        guard phase != .disabled, phase != .needsAttention, policy.canLogIn else { return false }
        guard consecutiveFailures == 0, !siteDown else { return false }
        if let notBefore, notBefore > now.monotonic { return false }
        return true
    }

    /// Why the readers' share of logins allows none now, or nil: readers (however many) start at most one login
    /// per ``SitePolicy/readerLoginInterval`` and no more in 24 hours than `max_failures_per_day` (SPEC section 8),
    /// so that no reader can make the daemon log in again and again, even where every login succeeds.
    public func readerBudgetRefusal(_ now: Now) -> String? {
        let recent = readerLoginTimes.filter { $0.duration(to: now.monotonic) < Self.day }
        if let last = recent.last, last.duration(to: now.monotonic) < policy.readerLoginInterval {
            return "readers may start one login per \(DurationText.format(policy.readerLoginInterval)) (refresh.min_interval), " +
                "and one started \(DurationText.format(.seconds(Int64(Self.seconds(last.duration(to: now.monotonic)))))) ago"
        }
        if recent.count >= policy.maxFailuresPerDay {
            return "readers started \(recent.count) logins in 24 hours, the daily cap (max_failures_per_day)"
        }
        return nil
    }

    private static let day = Duration.seconds(24 * 3600)

    /// A check or keepalive tells something: the site is not waiting for a person, or still has a session to keep.
    private func hasSessionToProbe(_ now: Now) -> Bool { phase != .needsAttention || sessionIsValid(now) }

    /// The site waits for a person because its check cannot pass: running it again tells nothing.
    private var checkIsKnownWrong: Bool { phase == .needsAttention && attentionReason == .checkNeverPasses }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension SiteSchedule.Event {
    /// Whether the event is fleet mode's: a lease taken or lost.
    var concernsLease: Bool {
        switch self {
        case .leaseTaken, .leaseLost: true
        default: false
        }
    }
}
