import Foundation

/// A signed-in session; `id` is the `demo_session` cookie value and the API's bearer token.
struct Session: Sendable {
    let id: String
    let user: String
    let created: Date
    var expires: Date
}

/// A password login waiting for its TOTP code (`demo_pending`).
struct PendingLogin: Sendable {
    let user: String
    let expires: Date
    var failedAttempts: Int
}

/// What the SSO host's authorization grants: a one-time ticket the main host exchanges for a session.
private struct SSOTicket: Sendable {
    let user: String
    let expires: Date
}

/// Counters that `GET /_control/stats` reports.
struct SiteStatistics: Sendable, Codable, Equatable {
    /// Sessions created by any path (form, TOTP, API, SSO).
    var logins = 0
    /// Password or TOTP attempts refused.
    var failedLogins = 0
    /// Requests to non-control routes, including those answered 503 while down.
    var requests = 0
    /// Sessions alive now.
    var activeSessions = 0
    /// Whether the down switch is on.
    var down = false
    /// Sign-ins on the identity provider's form (`--idp-host`).
    var providerLogins = 0
    /// Consents given on the identity provider's consent page.
    var consents = 0

    enum CodingKeys: String, CodingKey {
        case logins, requests, down, consents
        case providerLogins = "provider_logins"
        case failedLogins = "failed_logins"
        case activeSessions = "active_sessions"
    }
}

/// All server-side state of the demo site. An actor, because every request reads or changes it.
actor DemoSiteState {
    /// How long a password login may wait for its TOTP code.
    static let pendingLifetime: TimeInterval = 300
    /// Wrong codes allowed before the pending login is dropped and the password must be entered again.
    static let maximumTOTPAttempts = 5
    /// How long an SSO ticket can be exchanged (single use); real identity providers use about a minute.
    static let ticketLifetime: TimeInterval = 60
    /// Expired entries are swept after this many new ones, so lookups stay cheap without a timer.
    private static let sweepInterval = 256

    let now: DemoSite.WallClock
    /// The identity provider's sessions, consents and codes, and the app's pending sign-ins through it.
    var provider = ProviderState()
    private var sessions: [String: Session] = [:]
    private var pending: [String: PendingLogin] = [:]
    private var tickets: [String: SSOTicket] = [:]
    /// `sso_id` cookie values on the SSO host, with the user each one remembers and its expiry.
    private var ssoIdentities: [String: (user: String, expires: Date)] = [:]
    var statistics = SiteStatistics()
    /// The latest TOTP time step a login used, for replay rejection.
    private var lastAcceptedTOTPStep: Int64?
    /// The one-time code sent out of band for each pending login (`/login/code`), and the last one sent.
    private var sentCodes: [String: String] = [:]
    private var lastCode: String?
    private var insertionsSinceSweep = 0

    init(now: @escaping DemoSite.WallClock) {
        self.now = now
    }

    // MARK: Sessions

    func createSession(user: String, maxAge: Int) -> Session {
        sweepIfDue()
        let created = now()
        let session = Session(id: RandomToken.make(), user: user, created: created, expires: created + TimeInterval(maxAge))
        sessions[session.id] = session
        statistics.logins += 1
        return session
    }

    /// The live session with this id; an expired one is removed and nil returned.
    func session(id: String) -> Session? {
        guard let session = sessions[id] else { return nil }
        guard session.expires > now() else {
            sessions[id] = nil
            return nil
        }
        return session
    }

    /// Sliding expiry: the live session now expires `maxAge` seconds from now.
    func extend(id: String, maxAge: Int) -> Session? {
        guard var session = session(id: id) else { return nil }
        session.expires = now() + TimeInterval(maxAge)
        sessions[id] = session
        return session
    }

    /// The live session `id` under a new id, with the same user and expiry; the old id is revoked. Not a login:
    /// the counters stay. nil when `id` is no live session.
    func rotate(id: String) -> Session? {
        guard let session = session(id: id) else { return nil }
        sessions[id] = nil
        let renewed = Session(id: RandomToken.make(), user: session.user, created: session.created, expires: session.expires)
        sessions[renewed.id] = renewed
        return renewed
    }

    func revoke(id: String) {
        sessions[id] = nil
    }

    /// Revokes every session, pending login, SSO identity and ticket; returns how many sessions died.
    func revokeAll() -> Int {
        let count = sessions.count
        sessions.removeAll()
        pending.removeAll()
        ssoIdentities.removeAll()
        tickets.removeAll()
        return count
    }

    // MARK: Second factor

    func createPendingLogin(user: String) -> String {
        sweepIfDue()
        let id = RandomToken.make()
        pending[id] = PendingLogin(user: user, expires: now() + Self.pendingLifetime, failedAttempts: 0)
        return id
    }

    func pendingLogin(id: String) -> PendingLogin? {
        guard let login = pending[id] else { return nil }
        guard login.expires > now() else {
            pending[id] = nil
            return nil
        }
        return login
    }

    /// Counts a wrong code; returns false when the pending login is used up and has been dropped.
    func recordFailedCode(pendingID id: String) -> Bool {
        statistics.failedLogins += 1
        guard var login = pending[id] else { return false }
        login.failedAttempts += 1
        guard login.failedAttempts < Self.maximumTOTPAttempts else {
            pending[id] = nil
            return false
        }
        pending[id] = login
        return true
    }

    func completePendingLogin(id: String) {
        pending[id] = nil
        sentCodes[id] = nil
    }

    /// Records `code` as sent to the person's phone for the pending login `pendingID`.
    func sendCode(_ code: String, pendingID: String) {
        sentCodes[pendingID] = code
        lastCode = code
    }

    /// The code sent last, as the person's phone shows it.
    func lastSentCode() -> String? { lastCode }

    /// Whether `code` is the one sent for `pendingID`; a matching code is used up.
    func takeCode(_ code: String, pendingID: String) -> Bool {
        guard let sent = sentCodes[pendingID], !code.isEmpty, constantTimeEquals(sent, code) else { return false }
        sentCodes[pendingID] = nil
        return true
    }

    /// Records a TOTP step as used. With `rejectReplay`, a step at or before the last one used is refused
    /// (RFC 6238 5.2: the verifier must not accept the same OTP twice) and false returned.
    func acceptTOTPStep(_ step: Int64, rejectReplay: Bool) -> Bool {
        if rejectReplay, let last = lastAcceptedTOTPStep, step <= last {
            statistics.failedLogins += 1
            return false
        }
        lastAcceptedTOTPStep = max(step, lastAcceptedTOTPStep ?? step)
        return true
    }

    func recordFailedLogin() {
        statistics.failedLogins += 1
    }

    // MARK: Single sign-on

    /// The SSO identity behind an `sso_id` value, or a new one for `user` when it is missing or expired.
    func ssoIdentity(existing id: String?, user: String, lifetime: Int) -> String {
        if let id, let identity = ssoIdentities[id], identity.expires > now() { return id }
        sweepIfDue()
        let id = RandomToken.make()
        ssoIdentities[id] = (user, now() + TimeInterval(lifetime))
        return id
    }

    /// Issues a one-time ticket for the user an SSO identity remembers.
    func issueTicket(ssoID: String) -> String? {
        guard let identity = ssoIdentities[ssoID], identity.expires > now() else { return nil }
        let ticket = RandomToken.make()
        tickets[ticket] = SSOTicket(user: identity.user, expires: now() + Self.ticketLifetime)
        return ticket
    }

    /// Redeems a ticket once; returns its user, or nil when it is unknown, used or expired.
    func redeemTicket(_ ticket: String) -> String? {
        guard let grant = tickets.removeValue(forKey: ticket), grant.expires > now() else { return nil }
        return grant.user
    }

    // MARK: Switches and counters

    /// Counts a non-control request and tells whether the site is down.
    func countRequest() -> Bool {
        statistics.requests += 1
        return statistics.down
    }

    func setDown(_ down: Bool) {
        statistics.down = down
    }

    func currentStatistics() -> SiteStatistics {
        let date = now()
        var snapshot = statistics
        snapshot.activeSessions = sessions.values.filter { $0.expires > date }.count
        return snapshot
    }

    private func sweepIfDue() {
        insertionsSinceSweep += 1
        guard insertionsSinceSweep >= Self.sweepInterval else { return }
        insertionsSinceSweep = 0
        let date = now()
        sessions = sessions.filter { $0.value.expires > date }
        pending = pending.filter { $0.value.expires > date }
        tickets = tickets.filter { $0.value.expires > date }
        ssoIdentities = ssoIdentities.filter { $0.value.expires > date }
        provider.sessions = provider.sessions.filter { $0.value.expires > date }
        provider.codes = provider.codes.filter { $0.value.expires > date }
        provider.appStates = provider.appStates.filter { $0.value.expires > date }
    }
}
