import CookieJar
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig

/// "Log in one site": the one login path that `sessionkeeper login` and the daemon share.
///
/// A run restores the site's stored session into a fresh jar (as `cookies.keep_on_login` says, or not at
/// all for ``Start/fresh``), runs the flow, stores the new session, and rewrites the site's `outputs:`
/// files. It reports through a ``SessionEventSink`` and never prints.
public struct SiteLogin: Sendable {
    /// Where a login starts.
    public enum Start: Sendable, Hashable {
        /// From the stored session, filtered by `cookies.keep_on_login`.
        case storedSession
        /// From an empty jar (`login --fresh`).
        case fresh
    }

    public let client: any HTTPClient
    public let store: any SessionStore
    /// Makes the credential provider for one site (the CLI and the daemon adapt the Credentials module).
    public let credentials: @Sendable (SiteDefinition) -> any CredentialProvider
    public let plugins: any PluginRunner
    /// The process environment (`{{ env.NAME }}` for `allow_env` names; what plugins may inherit).
    public let environment: [String: String]
    /// The clock cookies are judged by.
    public let now: @Sendable () -> Date
    /// Report each request's and response's headers and every cookie decision (``FlowEngine/tracesExchanges``).
    public var tracesExchanges = false
    /// The TOTP periods whose codes this login path sent, per site: shared by all its runs so no code goes twice.
    public let oneTimeCodes: OneTimeCodeLedger
    /// How a run waits for the next TOTP period (``FlowEngine/sleep``); tests that move ``now`` by hand move it here.
    public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    public init(
        client: any HTTPClient, store: any SessionStore,
        credentials: @escaping @Sendable (SiteDefinition) -> any CredentialProvider,
        plugins: any PluginRunner = ProcessPluginRunner(),
        environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }, oneTimeCodes: OneTimeCodeLedger = OneTimeCodeLedger()
    ) {
        self.oneTimeCodes = oneTimeCodes
        self.client = client
        self.store = store
        self.credentials = credentials
        self.plugins = plugins
        self.environment = environment
        self.now = now
    }

    /// The same login path storing through `store`: in fleet mode, a run under a site's lease uses the
    /// store fenced by that lease, so its writes are refused once another keeper took the site over.
    public func storing(in store: any SessionStore) -> SiteLogin {
        var copy = SiteLogin(
            client: client, store: store, credentials: credentials, plugins: plugins, environment: environment, now: now,
            oneTimeCodes: oneTimeCodes)
        copy.tracesExchanges = tracesExchanges
        copy.sleep = sleep
        return copy
    }

    /// Logs `site` in and stores the session.
    /// - Parameter prompts: who answers the flow's `prompt` steps (the daemon's waiting slots, `login`'s terminal);
    ///   without one, a prompt step fails saying that nobody can answer.
    public func run(
        _ site: SiteDefinition, start: Start = .storedSession, events: SessionEventSink? = nil, prompts: (any PromptProvider)? = nil
    ) async throws(SiteLoginError) -> SiteLoginResult {
        let report: SessionEventSink = events ?? { _ in }
        let storage = SiteJar.makeStorage(for: site, clock: now)
        let previous: SessionRecord?
        switch start {
        case .fresh:
            report(.startingEmpty(site: site.name, reason: .fresh))
            // The cookies are left behind, not what the stored session says of the TOTP codes already sent.
            previous = try? await store.load(site: site.name)
            if let previous { oneTimeCodes.seed(site: site.name, counters: previous.oneTimeCodes) }
        case .storedSession:
            previous = await restore(site, into: storage, report: report)
        }

        var engine = engine(for: site)
        engine.prompts = prompts
        let flow: FlowResult
        do {
            flow = try await engine.login(site, storage: storage, observer: { report(.flow($0)) })
        } catch {
            throw .flow(error)
        }

        let kept = SessionRecord.persistable(
            flow.cookies, keepSessionCookies: site.cookies.persistSessionCookies, now: flow.finishedAt)
        // A plugin's User-Agent (a headless browser's) is the one the session was made with.
        let record = SessionRecord(
            cookies: kept, lastLogin: flow.finishedAt, expiresAt: flow.sessionExpiry, userAgent: flow.userAgent ?? site.http.userAgent,
            origins: flow.storageOrigins, oneTimeCodes: oneTimeCodes.sentCounters(site: site.name),
            // What was learned of the site's sessions is the site's, not the session's: a new login keeps it.
            learned: previous?.learned)
        do {
            try await store.save(record, site: site.name)
        } catch {
            throw .store(error)
        }
        report(.stored(site: site.name, cookieNames: Cookie.labels(kept), leftOut: flow.cookies.count - kept.count))

        let live = flow.cookies.filter { !$0.isExpired(at: flow.finishedAt) }
        // What loading the site warned of (an `outputs:` mode others may read) is said at every login, as
        // `http.insecure` is, so the daemon's log shows it too.
        for warning in site.warnings {
            report(.flow(.warning(site: site.name, message: "\(warning.mark): \(warning.message)")))
        }
        let outputFailures = writeOutputs(live, origins: record.origins, site: site, report: report)
        return SiteLoginResult(flow: flow, record: record, storage: storage, outputFailures: outputFailures)
    }

    /// Stores a session that changed without a login (a keepalive's renewed cookies, cookies a socket client
    /// handed back) and rewrites the site's `outputs:` files as a login does.
    /// - Parameter liveCookies: what the outputs get: every unexpired cookie, session cookies included.
    /// - Returns: the outputs that could not be written (the session was stored all the same).
    public func storeRenewal(
        _ record: SessionRecord, liveCookies: [Cookie], site: SiteDefinition, events: SessionEventSink? = nil
    ) async throws(SiteLoginError) -> [OutputWriter.Failure] {
        do {
            try await store.save(record, site: site.name)
        } catch {
            throw .store(error)
        }
        return writeOutputs(liveCookies, origins: record.origins, site: site, report: events ?? { _ in })
    }

    /// Rewrites every `outputs:` file of `site` (a `playwright` one with the session's localStorage too); one
    /// failing never stops the others.
    private func writeOutputs(
        _ live: [Cookie], origins: [StorageOrigin], site: SiteDefinition, report: SessionEventSink
    ) -> [OutputWriter.Failure] {
        var outputFailures: [OutputWriter.Failure] = []
        for output in site.outputs {
            do throws(OutputWriter.Failure) {
                // A header is what one request carries: the base_url's (formats with domains keep every host).
                let cookies = output.format == .header ? SessionCookies.select(live, url: site.baseURL, now: now()) : live
                try OutputWriter.write(cookies, origins: origins, to: output)
                report(.outputWritten(site: site.name, path: output.path, cookieCount: live.count))
            } catch {
                outputFailures.append(error)
                report(.outputFailed(site: site.name, path: output.path, problem: error.reason))
            }
        }
        return outputFailures
    }

    /// Puts the stored cookies that `keep_on_login` keeps into `storage`. A record that cannot be read is
    /// reported and ignored: the login starts empty and, if it succeeds, replaces it.
    /// - Returns: the stored record, nil when none could be read.
    private func restore(_ site: SiteDefinition, into storage: CookieStorage, report: SessionEventSink) async -> SessionRecord? {
        let record: SessionRecord?
        do {
            record = try await store.load(site: site.name)
        } catch {
            report(.restoreFailed(site: site.name, problem: error.detail))
            return nil
        }
        guard let record else {
            report(.startingEmpty(site: site.name, reason: .nothingStored))
            return nil
        }
        oneTimeCodes.seed(site: site.name, counters: record.oneTimeCodes)
        if case .none = site.cookies.keepOnLogin {
            report(.startingEmpty(site: site.name, reason: .keepNone))
            return record
        }
        let now = now()
        // select leaves out expired cookies itself; the live count is only for the report.
        let kept = StartingCookies.select(
            from: record.cookies, policy: site.cookies.keepOnLogin, essential: site.cookies.essential, baseURL: site.baseURL, now: now)
        let live = record.liveCookies(at: now)
        // Stored cookies were accepted once already; they go back in as they are, bypassing the accept policy.
        for cookie in kept { storage.setCookie(cookie) }
        report(.restored(
            site: site.name, cookieNames: Cookie.labels(kept), leftOut: live.count - kept.count, lastLogin: record.lastLogin))
        return record
    }
}

/// What a successful ``SiteLogin`` run produced.
public struct SiteLoginResult: Sendable {
    /// The flow's result (cookies, essential cookies, steps, timings).
    public var flow: FlowResult
    /// The record that was stored.
    public var record: SessionRecord
    /// The jar after the flow, every cookie in it (for `login --jar`).
    public var storage: CookieStorage
    /// The `outputs:` files that could not be written (the session was stored all the same).
    public var outputFailures: [OutputWriter.Failure]
}

/// Why a ``SiteLogin`` run failed.
public enum SiteLoginError: Error, Sendable, CustomStringConvertible {
    /// The flow failed: the error names the site, the step and what differed, with secrets masked.
    case flow(FlowError)
    /// The login worked but its session could not be stored.
    case store(SessionStoreError)

    public var description: String {
        switch self {
        case .flow(let error): error.description
        case .store(let error): "logged in, but the session was not stored: \(error)"
        }
    }
}

/// A site's jar: the storage with the site's accept policy and limits (`cookies:` of SPEC section 3).
public enum SiteJar {
    /// An empty jar for `site`.
    public static func makeStorage(for site: SiteDefinition, clock: @escaping @Sendable () -> Date = { Date() }) -> CookieStorage {
        let defaults = CookieLimits()
        let limits = CookieLimits(
            maxCookieBytes: site.cookies.limits.maxCookieBytes ?? defaults.maxCookieBytes,
            maxCookiesPerDomain: site.cookies.limits.maxCookiesPerDomain ?? defaults.maxCookiesPerDomain,
            maxCookies: site.cookies.limits.maxCookies ?? defaults.maxCookies)
        return CookieStorage(acceptPolicy: acceptPolicy(site.cookies.accept), limits: limits, clock: clock)
    }

    /// The jar's policy for a site's `cookies.accept`.
    public static func acceptPolicy(_ accept: CookiePolicy.Accept) -> CookieAcceptPolicy {
        switch accept {
        case .always: .always
        case .never: .never
        case .mainDocumentDomain: .mainDocumentDomain
        }
    }
}
