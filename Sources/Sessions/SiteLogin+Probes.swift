import CookieJar
import Foundation
import LoginFlow
import SiteConfig

// MARK: The check and the keepalive on a stored session: the one way the daemon, `probe` and `login --check` run them

extension SiteLogin {
    /// The flow engine of this login path for `site` (its credentials, plugins, environment and clock).
    public func engine(for site: SiteDefinition) -> FlowEngine {
        var engine = FlowEngine(client: client, credentials: credentials(site), plugins: plugins, environment: environment, now: now)
        engine.tracesExchanges = tracesExchanges
        engine.oneTimeCodes = oneTimeCodes
        engine.sleep = sleep
        return engine
    }

    /// Runs `site`'s `check:` on `session` as the daemon serves it: its live cookies in the site's jar, sent with
    /// the session's User-Agent (a browser login's, which a site binding sessions to it expects). No login runs.
    /// Throws when the check does not pass or cannot reach the site (``FlowError/isUnreachable``).
    public func check(
        _ site: SiteDefinition, session: SessionRecord?, observer: FlowObserver? = nil
    ) async throws(FlowError) -> ProbeResult {
        let (probed, storage) = probeSetup(site, session: session)
        return try await engine(for: site).check(probed, storage: storage, observer: observer)
    }

    /// Runs `site`'s `check:` on the cookies of `storage` (a session not served yet: a change a reader's request
    /// brought), sent with `userAgent` when given; `storage` then holds what the site set meanwhile.
    /// Throws as ``check(_:session:observer:)`` does.
    public func check(_ site: SiteDefinition, storage: CookieStorage, userAgent: String?) async throws(FlowError) -> ProbeResult {
        var probed = site
        if let userAgent { probed.http.userAgent = userAgent }
        return try await engine(for: site).check(probed, storage: storage)
    }

    /// Runs `site`'s `keepalive:` on `session` as ``check(_:session:observer:)`` runs the check; the jar it returns
    /// holds what the site set meanwhile (a sliding session's renewed cookie).
    public func keepalive(
        _ site: SiteDefinition, session: SessionRecord?, observer: FlowObserver? = nil
    ) async throws(FlowError) -> (result: ProbeResult, storage: CookieStorage) {
        let (probed, storage) = probeSetup(site, session: session)
        let result = try await engine(for: site).keepalive(probed, storage: storage, observer: observer)
        return (result, storage)
    }

    /// The site as a probe sends it (the session's User-Agent) and a jar holding the session's live cookies.
    private func probeSetup(_ site: SiteDefinition, session: SessionRecord?) -> (SiteDefinition, CookieStorage) {
        let storage = SiteJar.makeStorage(for: site, clock: now)
        for cookie in session?.liveCookies(at: now()) ?? [] { storage.setCookie(cookie) }
        var probed = site
        if let userAgent = session?.userAgent { probed.http.userAgent = userAgent }
        return (probed, storage)
    }
}
