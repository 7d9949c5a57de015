import CookieJar
import Foundation
import HTTPTransport
import SiteConfig

/// Runs a site's login flow, `check` and `keepalive` (SPEC sections 3 and 5) against any
/// ``HTTPClient``, with the site's ``CookieStorage`` as the only cookie store.
///
/// The engine follows redirects itself, hop by hop, so every hop's Set-Cookie goes through the storage
/// (and its accept policy) and every hop sends the cookies its own URL should get. It never prints:
/// progress goes to the observer, failures come back as ``FlowError`` with secrets masked.
public struct FlowEngine: Sendable {
    /// Redirects followed per step when the site sets no `http.max_redirects` (curl's and browsers' order
    /// of magnitude: 20 in Chrome and Firefox, 50 in curl).
    public static let defaultMaxRedirects = 10
    /// `last_response.body` sent to plugins is cut to this (SPEC section 5).
    public static let pluginBodyLimit = 1024 * 1024
    /// The version of the plugin protocol (docs/PLUGINS.md) written on every plugin's stdin as `"protocol"`;
    /// an answer carrying another `protocol` fails the step.
    public static let pluginProtocol = 1

    /// Where a flow's own work (templating, parsing pages, the cookie jar) runs between its requests.
    public enum Placement: Sendable, Hashable {
        /// Wherever the calling task runs: Swift's global concurrent executor unless the caller chose another
        /// (a task created with `executorPreference: client.preferredTaskExecutor` runs on the transport
        /// thread). Flows run on every core, and parsing a large page never holds up other transfers.
        case caller
        /// On the client's ``HTTPClient/preferredTaskExecutor`` when it has one (the libcurl client's transport
        /// thread): a response's continuation and the parsing after it need no hop to another thread, but every
        /// other transfer waits while a page is parsed, and flows share one core.
        case transportThread
    }

    public let client: any HTTPClient
    public let credentials: any CredentialProvider
    public let plugins: any PluginRunner
    /// The daemon's environment: `{{ env.NAME }}` (for `allow_env` names), plugin `env:` inheritance, and
    /// PATH, HOME and LANG of plugins.
    public let environment: [String: String]
    /// The clock cookie expiry is judged by.
    public let now: @Sendable () -> Date
    /// Where `login`, `check` and `keepalive` run.
    public let placement: Placement
    /// Step URLs resolved against `base_url` by earlier runs.
    let resolvedURLs = ResolvedURLCache()
    /// Report every request's and response's headers, the start of each body and every cookie decision
    /// (``FlowEvent/requestTrace(_:)`` and the others), masked; for `login -vv`. Off by default: the daemon
    /// does not pay for events nobody reads.
    public var tracesExchanges = false
    /// Who answers `prompt` steps; without one, a prompt step fails saying that nobody can answer here.
    public var prompts: (any PromptProvider)?
    /// The one-time codes already sent, per site and credential: a code is never sent twice (SPEC section 3).
    /// Share one across the runs of a login path.
    public var oneTimeCodes = OneTimeCodeLedger()
    /// How the run waits for the next TOTP period; tests that move ``now`` by hand pass a function that moves it.
    public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    /// Characters of a body a trace shows.
    public static let traceBodyLength = 512

    public init(
        client: any HTTPClient, credentials: any CredentialProvider, plugins: any PluginRunner = ProcessPluginRunner(),
        environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }, placement: Placement = .caller
    ) {
        self.client = client
        self.credentials = credentials
        self.plugins = plugins
        self.environment = environment
        self.now = now
        self.placement = placement
    }

    // MARK: Login

    /// Logs in: runs `login.steps` in order (or the login plugin) against `storage`, then checks that every
    /// `cookies.essential` cookie is set and unexpired.
    ///
    /// The storage is used as it is (the caller decides whether a login starts from an empty jar).
    ///
    /// The flow runs where ``placement`` says.
    public func login(
        _ site: SiteDefinition, storage: CookieStorage, observer: FlowObserver? = nil
    ) async throws(FlowError) -> FlowResult {
        try await onPreferredExecutor { () async throws(FlowError) -> FlowResult in
            try await runLogin(site, storage: storage, observer: observer)
        }
    }

    private func runLogin(
        _ site: SiteDefinition, storage: CookieStorage, observer: FlowObserver?
    ) async throws(FlowError) -> FlowResult {
        let started = ContinuousClock.now
        if site.http.insecure {
            observer?(.warning(site: site.name, message: "TLS certificate verification is disabled (http.insecure) for \(site.baseURL.redactedForLog)"))
        }
        var state = RunState(site: site, environment: environment)
        for cookie in storage.allCookies { state.masker.addValue(cookie.value) }
        try await resolveInputs(site, state: &state)

        switch site.login {
        case .manual:
            throw FlowError(
                kind: .invalidRequest, site: site.name, step: nil,
                detail: "the site logs in manually (login: manual): its cookies come from `sessionkeeper import \(site.name) FILE`")
        case .steps(let steps):
            let doneWhen = site.doneWhen
            for (index, step) in steps.enumerated() {
                try checkCancellation(site: site.name, step: step.name)
                if let when = step.when {
                    // SPEC section 3: judged on the previous response; a step that is not needed is skipped.
                    guard let previous = state.lastResponse else {
                        throw FlowError(
                            kind: .invalidRequest, site: site.name, step: step.name, mark: step.mark,
                            detail: "'when' judges the previous response, and no HTTP step ran before this one")
                    }
                    if let unmet = unmetCondition(when, response: previous, storage: storage, masker: state.masker) {
                        observer?(.stepSkipped(
                            site: site.name, step: step.name, index: index + 1, count: steps.count,
                            reason: "when: expected \(unmet.expected), found \(unmet.found)"))
                        continue
                    }
                }
                observer?(.stepStarted(site: site.name, step: step.name, index: index + 1, count: steps.count))
                let timing: StepTiming
                switch step.action {
                case .request(let request):
                    timing = try await perform(
                        request, name: step.name, mark: step.mark, state: &state, storage: storage, observer: observer,
                        doneWhen: doneWhen)
                case .plugin(let plugin):
                    timing = try await runPlugin(plugin, name: step.name, mark: step.mark, state: &state, storage: storage, observer: observer)
                case .prompt(let prompt):
                    timing = try await ask(prompt, name: step.name, mark: step.mark, state: &state)
                }
                state.timings.append(timing)
                observer?(.stepFinished(site: site.name, timing: timing))
                if timing.endedLogin {
                    observer?(.loginDone(site: site.name, step: step.name, stepsLeft: steps.count - index - 1))
                    break
                }
            }
        case .plugin(let plugin):
            observer?(.stepStarted(site: site.name, step: "login", index: 1, count: 1))
            let timing = try await runPlugin(plugin, name: "login", mark: nil, state: &state, storage: storage, observer: observer)
            state.timings.append(timing)
            observer?(.stepFinished(site: site.name, timing: timing))
        }

        let cookies = storage.allCookies
        let essentials = essentialCookies(site, cookies: cookies)
        if let (entry, missing) = zip(site.cookies.essential, essentials).first(where: { !$0.1.isSet }) {
            let others = Set(cookies.filter { entry.matches(name: $0.name) && !entry.matches($0, baseURL: site.baseURL) }.map(\.domain))
            let found = cookies.contains { entry.matches($0, baseURL: site.baseURL) } ? "only an expired one"
                : others.isEmpty ? "no such cookie"
                : "only one for another host (\(others.sorted().joined(separator: ", "))); name that host with {name: \(entry.name), domain: HOST}"
            throw FlowError(
                kind: .essentialCookieMissing, site: site.name, step: state.timings.last?.step,
                expected: "essential cookie \(missing.label) set and unexpired after the login", found: found,
                response: state.lastResponse.map { FlowError.ResponseSummary($0, masker: state.masker) })
        }
        return FlowResult(
            site: site.name, cookies: cookies, essentialCookies: essentials, steps: state.timings,
            finalURL: state.lastResponse.map { resolvedURLs.redacted($0.url) }, duration: ContinuousClock.now - started, finishedAt: now(),
            userAgent: state.sessionUserAgent, storageOrigins: state.storageOrigins)
    }

    /// SPEC section 3: every credential and environment variable the flow's templates name is resolved
    /// before the first request, so a missing one fails at once rather than after half a login (which may
    /// count as a failed attempt on the site). Errors name the step that uses the value. A TOTP credential's
    /// secret is read here; its code is computed when the request carrying it is built (``stampOneTimeCodes``).
    private func resolveInputs(_ site: SiteDefinition, state: inout RunState) async throws(FlowError) {
        func preparePlugin(_ plugin: PluginStep, step: String, mark: SourceMark?) async throws(FlowError) {
            try await state.prepare({ plugin.forEachVariable($0) }, provider: credentials, step: step, mark: mark)
            if plugin.passCredentials {
                for entry in site.credentials {
                    try await state.resolveCredential(entry.name, provider: credentials, step: step, mark: mark)
                }
            }
        }
        switch site.login {
        case .manual:
            return
        case .steps(let steps):
            for step in steps {
                switch step.action {
                case .request(let request):
                    try await state.prepare({ request.forEachVariable($0) }, provider: credentials, step: step.name, mark: step.mark)
                case .plugin(let plugin):
                    try await preparePlugin(plugin, step: step.name, mark: step.mark)
                case .prompt:
                    // Its answer comes when the flow reaches it; nothing of it can be resolved before.
                    continue
                }
            }
        case .plugin(let plugin):
            try await preparePlugin(plugin, step: "login", mark: nil)
        }
    }

    // MARK: Check and keepalive

    /// Runs the site's `check:` request with the stored cookies. Without `expect:` it expects a 2xx status;
    /// the essential cookies must still be set afterwards. Throws when the session is not alive (or the site
    /// cannot be reached: see ``FlowError/isUnreachable``).
    public func check(
        _ site: SiteDefinition, storage: CookieStorage, observer: FlowObserver? = nil
    ) async throws(FlowError) -> ProbeResult {
        guard let probe = site.check else {
            throw FlowError(kind: .invalidRequest, site: site.name, step: "check", detail: "the site has no check:")
        }
        let result = try await onPreferredExecutor { () async throws(FlowError) -> ProbeResult in
            try await runProbe(probe, name: "check", site: site, storage: storage, observer: observer)
        }
        if let missing = result.essentialCookies.first(where: { !$0.isSet }) {
            throw FlowError(
                kind: .essentialCookieMissing, site: site.name, step: "check", mark: probe.mark,
                expected: "essential cookie \(missing.label) set and unexpired", found: "it is gone")
        }
        return result
    }

    /// Runs the site's `keepalive:` request with the stored cookies, storing what it sets (a sliding
    /// session's renewed cookie). Without `expect:` it expects a 2xx status.
    public func keepalive(
        _ site: SiteDefinition, storage: CookieStorage, observer: FlowObserver? = nil
    ) async throws(FlowError) -> ProbeResult {
        guard let probe = site.keepalive else {
            throw FlowError(kind: .invalidRequest, site: site.name, step: "keepalive", detail: "the site has no keepalive:")
        }
        return try await onPreferredExecutor { () async throws(FlowError) -> ProbeResult in
            try await runProbe(probe, name: "keepalive", site: site, storage: storage, observer: observer)
        }
    }

    private func runProbe(
        _ probe: Probe, name: String, site: SiteDefinition, storage: CookieStorage, observer: FlowObserver?
    ) async throws(FlowError) -> ProbeResult {
        let started = ContinuousClock.now
        var state = RunState(site: site, environment: environment)
        for cookie in storage.allCookies { state.masker.addValue(cookie.value) }
        // A check's page shows what the login's showed (the user's name): masked as in login traces. Values
        // written in the file cost nothing; with traces (-vv) every credential but a one-time code is resolved
        // for it, as the login resolves them, and one that cannot be is simply not there to mask.
        for entry in site.credentials {
            switch entry.source {
            case .literal(let value): state.masker.addSecret(value)
            case .totp: continue
            default:
                if tracesExchanges { try? await state.resolveCredential(entry.name, provider: credentials, step: name, mark: nil) }
            }
        }
        var request = probe.request
        if request.expect.isEmpty { request.expect = [Expectation(.status(Array(200...299)), mark: probe.mark)] }
        observer?(.stepStarted(site: site.name, step: name, index: 1, count: 1))
        let timing = try await perform(request, name: name, mark: probe.mark, state: &state, storage: storage, observer: observer)
        observer?(.stepFinished(site: site.name, timing: timing))
        let response = state.lastResponse
        return ProbeResult(
            site: site.name, status: response?.status ?? 0, url: response?.url.redactedForLog ?? "",
            duration: ContinuousClock.now - started, essentialCookies: essentialCookies(site, storage: storage),
            finishedAt: now())
    }

    // MARK: Shared

    /// Runs `body` where ``placement`` says: as it is for `.caller`; for `.transportThread` with the client's
    /// preferred task executor as the task's preference, unless the client has none or the task already
    /// prefers it (a caller that runs many flows on it), which spares the preference record and the two hops.
    func onPreferredExecutor<Result>(
        _ body: () async throws(FlowError) -> Result
    ) async throws(FlowError) -> Result {
        guard placement == .transportThread, let executor = client.preferredTaskExecutor else { return try await body() }
        let current = withUnsafeCurrentTask { $0?.unownedTaskExecutor }
        if current == executor.asUnownedTaskExecutor() { return try await body() }
        return try await withTaskExecutorPreference(executor) { () async throws(FlowError) -> Result in try await body() }
    }

    /// The state of each essential cookie in the storage now.
    public func essentialCookies(_ site: SiteDefinition, storage: CookieStorage) -> [EssentialCookie] {
        essentialCookies(site, cookies: storage.allCookies)
    }

    /// The state of each essential cookie among `all`.
    func essentialCookies(_ site: SiteDefinition, cookies all: [Cookie]) -> [EssentialCookie] {
        let date = now()
        let entries = site.cookies.essential
        // Two entries of one name (an app's and its identity provider's session) are told apart by their host.
        let shared = Set(entries.map(\.name).filter { name in entries.filter { $0.name == name }.count > 1 })
        return entries.map { entry in
            let live = all.filter { entry.matches($0, baseURL: site.baseURL) && !$0.isExpired(at: date) }
            // With several (per path or host), the one that expires first bounds the session.
            let chosen = live.min { ($0.expires ?? .distantFuture) < ($1.expires ?? .distantFuture) }
            // A prefix entry (`DW*`) is shown by the name it matched.
            let name = chosen?.name ?? entry.name
            let host = entry.domain ?? chosen?.domain ?? site.baseURL.host ?? ""
            return EssentialCookie(
                name: name, isSet: chosen != nil, expires: chosen?.expires, domain: chosen?.domain,
                label: shared.contains(entry.name) ? "\(name) (\(host))" : name)
        }
    }

    func checkCancellation(site: String, step: String?) throws(FlowError) {
        if Task.isCancelled { throw FlowError(kind: .cancelled, site: site, step: step, detail: "the run was cancelled") }
    }
}
