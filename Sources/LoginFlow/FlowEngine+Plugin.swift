import CookieJar
import Foundation
import HTTPTransport
import JSON
import Platform
import SiteConfig

extension FlowEngine {
    /// Runs a plugin step (or a whole plugin login) with SPEC section 5's JSON protocol, then applies its
    /// answer: variables, cookies, Set-Cookie lines, headers for the following requests.
    func runPlugin(
        _ plugin: PluginStep, name: String, mark: SourceMark?, state: inout RunState, storage: CookieStorage,
        observer: FlowObserver?
    ) async throws(FlowError) -> StepTiming {
        let site = state.site
        let started = ContinuousClock.now
        // Details are masked where the error leaves this function (the closure must not capture `state`).
        let failure = { (detail: String) -> FlowError in
            FlowError(kind: .plugin, site: site.name, step: name, mark: mark, detail: "\(plugin.plugin): \(detail)")
        }

        try await state.prepare({ plugin.forEachVariable($0) }, provider: credentials, step: name, mark: mark)
        if plugin.passCredentials {
            for entry in site.credentials {
                try await state.resolveCredential(entry.name, provider: credentials, step: name, mark: mark)
            }
            _ = try await stampOneTimeCodes(names: site.credentials.map(\.name), step: name, mark: mark, state: &state, observer: observer)
        } else {
            _ = try await stampOneTimeCodes({ plugin.forEachVariable($0) }, step: name, mark: mark, state: &state, observer: observer)
        }
        let with = try state.render(plugin.with, step: name, mark: mark)
        // The input's `http` carries the proxy URL, whose password must not show in a trace.
        if let proxy = site.http.proxy, let password = URLComponents(string: proxy)?.password, !password.isEmpty {
            state.masker.addSecret(password)
        }
        // SPEC section 5: PATH, HOME and LANG of the daemon, then the step's `env:`.
        var childEnvironment = ChildEnvironment.minimal(from: environment).variables
        for entry in plugin.environment {
            switch entry {
            case .inherit(let variable):
                if let value = environment[variable] {
                    childEnvironment[variable] = value
                    state.masker.addValue(value)
                }
            case .set(let variable, let template):
                childEnvironment[variable] = try state.render(template, step: name, mark: mark)
            }
        }

        do {
            try await exchange(plugin, name: name, input: pluginInput(step: name, with: with, plugin: plugin, state: state, storage: storage),
                environment: childEnvironment, state: &state, storage: storage, observer: observer, failure: failure)
        } catch {
            var masked = error
            masked.detail = error.detail.map { state.masker.redact($0) }
            throw masked
        }
        return StepTiming(step: name, duration: ContinuousClock.now - started, requests: 0, status: nil)
    }

    private func exchange(
        _ plugin: PluginStep, name: String, input document: JSONValue, environment childEnvironment: [String: String],
        state: inout RunState, storage: CookieStorage, observer: FlowObserver?, failure: (String) -> FlowError
    ) async throws(FlowError) {
        let site = state.site
        let input = Data(document.serialized.utf8)
        let masker = state.masker
        let siteName = site.name
        if tracesExchanges { observer?(.pluginTrace(PluginTracer.input(document, site: siteName, step: name, masker: masker))) }
        let output: PluginOutput
        do {
            output = try await plugins.run(
                PluginInvocation(executablePath: plugin.executablePath, environment: childEnvironment, input: input, timeout: plugin.timeout),
                standardErrorLine: { line in observer?(.pluginOutput(site: siteName, step: name, line: masker.redact(line))) })
        } catch {
            throw failure(error.message)
        }
        try checkCancellation(site: site.name, step: name)
        if tracesExchanges {
            let trace: FlowEvent.PluginTrace
            if let answer = try? JSONValue.parse(Array(output.standardOutput)) {
                trace = PluginTracer.output(answer, site: siteName, step: name, masker: masker)
            } else {
                // Not JSON: its text could be anything, a secret included; its size is what helps.
                trace = FlowEvent.PluginTrace(site: siteName, step: name, direction: .output, json: "(not JSON: \(output.standardOutput.count) bytes)")
            }
            observer?(.pluginTrace(trace))
        }

        let answer = try Self.parseAnswer(output, timeout: plugin.timeout, now: now(), failure: failure)
        try apply(answer, state: &state, storage: storage, failure: failure)
    }

    /// stdin: `{"protocol", "site", "base_url", "http", "step", "with", "vars", "cookies", "last_response", "credentials"?}`.
    private func pluginInput(
        step: String, with: JSONValue, plugin: PluginStep, state: RunState, storage: CookieStorage
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("protocol", .number(String(Self.pluginProtocol))),
            ("site", .string(state.site.name)),
            ("base_url", .string(state.site.baseURL.absoluteString)),
            ("http", Self.pluginTransport(state.site.http)),
            ("step", .string(step)),
            ("with", with),
            ("vars", .object(state.variables.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("cookies", .array(storage.allCookies.map(\.jsonObject))),
        ]
        if let response = state.lastResponse {
            var body = response.body
            if body.count > Self.pluginBodyLimit { body = body.prefix(Self.pluginBodyLimit) }
            members.append((
                "last_response",
                .object([
                    ("status", .number(String(response.status))),
                    ("url", .string(response.url.absoluteString)),
                    ("headers", .array(response.headers.map { .array([.string($0.name), .string($0.value)]) })),
                    ("body", .string(String(decoding: body, as: UTF8.self))),
                ])
            ))
        } else {
            members.append(("last_response", .null))
        }
        if plugin.passCredentials {
            members.append((
                "credentials",
                .object(state.site.credentials.compactMap { entry in state.credentials[entry.name].map { (entry.name, .string($0)) } })
            ))
        }
        return .object(members)
    }

    /// The site's transport settings a plugin that makes its own requests (a browser) needs so that its traffic
    /// goes where the site file says: `{"proxy", "resolve", "ca_file", "client_cert", "insecure"}` (docs/PLUGINS.md).
    static func pluginTransport(_ http: HTTPSettings) -> JSONValue {
        let clientCertificate: JSONValue = http.clientCertificate.map {
            .object([("cert", .string($0.certificatePath)), ("key", .string($0.keyPath))])
        } ?? .null
        return .object([
            ("proxy", http.proxy.map(JSONValue.string) ?? .null),
            ("resolve", .array(http.resolve.map(JSONValue.string))),
            ("ca_file", http.caFile.map(JSONValue.string) ?? .null),
            ("client_cert", clientCertificate),
            ("insecure", .bool(http.insecure)),
        ])
    }

    /// stdout (SPEC section 5, docs/PLUGINS.md): `{"protocol", "vars", "cookies", "set_cookie", "headers",
    /// "user_agent", "origins", "error"}`, every key optional and null meaning absent. `error` is read before
    /// the rest (it explains a failed exit too); `protocol` before that (another protocol may mean anything).
    struct PluginReply: Decodable {
        /// Variables for the following steps: strings as they are, other values as their JSON text.
        var vars: [String: JSONValue]?
        /// Cookies in the `json` cookie format.
        var cookies: [Cookie]?
        /// Set-Cookie header values, stored as if the site's base URL had sent them.
        var setCookie: [String]?
        /// Headers for the following requests: values as `vars`.
        var headers: [String: JSONValue]?
        /// The User-Agent the session was made with (a browser's), for the rest of the run and the session.
        var userAgent: String?
        /// localStorage per origin, as Playwright's storageState `origins`.
        var origins: [StorageOrigin]?

        enum CodingKeys: String, CodingKey {
            case vars, cookies, setCookie = "set_cookie", headers, userAgent = "user_agent", origins
        }
    }

    /// The plugin's answer decoded, or the failure to report: output cut at the cap, a timeout, a signal, a
    /// non-zero exit (with the answer's `error` when it has one), output that is not one JSON object, another
    /// protocol, an `error` key, or keys that do not fit the protocol. Pure (no process, no state): the fuzz
    /// target `plugin-answer` calls it with arbitrary output.
    /// - Parameter now: the creation time of cookies whose object gives none.
    static func parseAnswer(
        _ output: PluginOutput, timeout: Duration, now: Date, failure: (String) -> FlowError
    ) throws(FlowError) -> PluginReply {
        let parsed = Result { () throws(JSONSyntaxError) -> JSONValue in try JSONValue.parse(Array(output.standardOutput)) }
        var reported: String?
        if case .success(let document) = parsed, let error = document["error"], error != .null { reported = error.plainText }
        if output.outputTruncated {
            throw failure(
                "it printed more than \(ProcessPluginRunner.maximumOutputSize / (1024 * 1024)) MiB on standard output (the answer is one "
                    + "JSON object); its process group was killed")
        }
        switch output.termination {
        case .timedOut:
            throw failure("timed out after \(DurationText.format(timeout)); its process group was killed")
        case .signaled(let signal):
            throw failure("killed by signal \(signal)" + (reported.map { ": \($0)" } ?? ""))
        case .exited(let status) where status != 0:
            throw failure("exited with status \(status)" + (reported.map { ": \($0)" } ?? ""))
        case .exited:
            break
        }
        let document: JSONValue
        switch parsed {
        case .success(let value): document = value
        case .failure(let error):
            throw failure(output.standardOutput.isEmpty ? "it printed nothing (one JSON object expected on stdout)" : "its output is not JSON (\(error))")
        }
        guard case .object = document else { throw failure("its output is JSON but not an object") }
        if let spoken = document["protocol"], spoken != .null, spoken != .number(String(Self.pluginProtocol)) {
            let version = if case .number(let text) = spoken { text } else { JSONWriter.write(spoken) }
            throw failure("it answered protocol \(version); this SessionKeeper speaks protocol \(Self.pluginProtocol)")
        }
        if let reported { throw failure(reported) }
        do {
            return try JSONValueDecoder(userInfo: [.cookieDefaultCreationTime: now]).decode(PluginReply.self, from: document)
        } catch {
            // Names the key and the types, never a value: "cookies" item 2: "name" is missing.
            let place = error.path.enumerated().map { position, component in
                switch component {
                case .key(let name): (position == 0 ? "" : ": ") + "\"\(name)\""
                case .index(let index): " item \(index + 1)"
                }
            }.joined()
            throw failure("its output does not fit the plugin protocol: \(place) \(error.reason)")
        }
    }

    private func apply(
        _ reply: PluginReply, state: inout RunState, storage: CookieStorage, failure: (String) -> FlowError
    ) throws(FlowError) {
        let site = state.site
        if let userAgent = reply.userAgent {
            // It becomes a request header: one line of visible text, as `http.user_agent` must be.
            guard !userAgent.allSatisfy(\.isWhitespace), !userAgent.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw failure("its output does not fit the plugin protocol: \"user_agent\" must be one line of text")
            }
            state.sessionUserAgent = userAgent
        }
        if let origins = reply.origins {
            for origin in origins { for item in origin.localStorage { state.masker.addValue(item.value) } }
            state.storageOrigins = origins
        }
        // Sorted by name: JSON objects are unordered, and the flow must not depend on the plugin's order.
        for (name, value) in (reply.vars ?? [:]).sorted(by: { $0.key < $1.key }) { state.setVariable(name, value.plainText) }
        for (name, value) in (reply.headers ?? [:]).sorted(by: { $0.key < $1.key }) {
            state.pluginHeaders.replaceOrAdd(name: name, value: value.plainText)
            state.masker.addSecret(value.plainText)
        }
        if let cookies = reply.cookies {
            // Masked whether stored or not: the plugin handed them over as session values. Stored under the
            // site's accept policy, like a response's cookies.
            for cookie in cookies { state.masker.addValue(cookie.value) }
            storage.setCookies(cookies, mainDocumentURL: site.baseURL)
        }
        if let lines = reply.setCookie {
            for case .stored(let cookie) in storage.setCookies(fromHeaders: lines, for: site.baseURL, mainDocumentURL: site.baseURL) {
                state.masker.addValue(cookie.value)
            }
        }
    }
}
