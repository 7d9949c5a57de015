import Foundation

/// The identity provider's own state (`--idp-host`): its sessions (its `demo_session` on its host), the consents
/// its users gave, and the authorization codes it issued, each single use.
struct ProviderState: Sendable {
    /// How long an authorization code can be redeemed (RFC 6749 section 4.1.2: "a maximum lifetime of 10 minutes
    /// is RECOMMENDED"; providers use about a minute).
    static let codeLifetime: TimeInterval = 60

    struct Grant: Sendable {
        let user: String
        let redirectURI: String
        let expires: Date
    }

    var sessions: [String: (user: String, expires: Date)] = [:]
    /// `user client_id` for each consent given.
    var consents: Set<String> = []
    var codes: [String: Grant] = [:]
    /// The `state` each pending app sign-in sent, by the app's `demo_oidc` cookie value.
    var appStates: [String: (state: String, expires: Date)] = [:]
}

extension DemoSiteState {
    // MARK: The provider's sessions and consents

    func createProviderSession(user: String, maxAge: Int) -> String {
        let id = RandomToken.make()
        provider.sessions[id] = (user, now() + TimeInterval(maxAge))
        statistics.providerLogins += 1
        return id
    }

    func providerSession(id: String?) -> String? {
        guard let id, let session = provider.sessions[id], session.expires > now() else { return nil }
        return session.user
    }

    func hasConsent(user: String, client: String) -> Bool { provider.consents.contains("\(user) \(client)") }

    func giveConsent(user: String, client: String) {
        provider.consents.insert("\(user) \(client)")
        statistics.consents += 1
    }

    /// An authorization code for `user`, redeemable once for `redirectURI` within ``ProviderState/codeLifetime``.
    func issueCode(user: String, redirectURI: String) -> String {
        let code = RandomToken.make()
        provider.codes[code] = ProviderState.Grant(user: user, redirectURI: redirectURI, expires: now() + ProviderState.codeLifetime)
        return code
    }

    /// Redeems a code once (RFC 6749 section 4.1.2: single use, bound to its redirect URI).
    func redeemCode(_ code: String, redirectURI: String) -> String? {
        guard let grant = provider.codes.removeValue(forKey: code), grant.expires > now(), grant.redirectURI == redirectURI
        else { return nil }
        return grant.user
    }

    // MARK: The app's side of the sign-in

    /// A pending sign-in of the app: its cookie value and the `state` sent to the provider with it.
    func startAppSignIn() -> (cookie: String, state: String) {
        let cookie = RandomToken.make()
        let state = RandomToken.make()
        provider.appStates[cookie] = (state, now() + ProviderState.codeLifetime * 10)
        return (cookie, state)
    }

    /// Ends a pending sign-in: true when `state` is the one it sent (RFC 6749 section 10.12, CSRF).
    func finishAppSignIn(cookie: String?, state: String?) -> Bool {
        guard let cookie, let state, let pending = provider.appStates.removeValue(forKey: cookie), pending.expires > now() else {
            return false
        }
        return constantTimeEquals(pending.state, state)
    }
}
