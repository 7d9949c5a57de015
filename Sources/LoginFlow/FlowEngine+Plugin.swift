import CookieJar
import Foundation
import HTTPTransport
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
        }
        let with = try state.render(plugin.with, step: name, mark: mark)
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
        let output: PluginOutput
        do {
            output = try await plugins.run(
                PluginInvocation(executablePath: plugin.executablePath, environment: childEnvironment, input: input, timeout: plugin.timeout),
                standardErrorLine: { line in observer?(.pluginOutput(site: siteName, step: name, line: masker.redact(line))) })
        } catch {
            throw failure(error.message)
        }
        try checkCancellation(site: site.name, step: name)

        let answer = try parseAnswer(output, timeout: plugin.timeout, failure: failure)
        try apply(answer, state: &state, storage: storage, failure: failure)
    }

    /// stdin: `{"site", "step", "with", "vars", "cookies", "last_response", "credentials"?}`.
    private func pluginInput(
        step: String, with: JSONValue, plugin: PluginStep, state: RunState, storage: CookieStorage
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("site", .string(state.site.name)),
            ("step", .string(step)),
            ("with", with),
            ("vars", .object(state.variables.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("cookies", (try? JSONText.parse(CookieCodec.encode(storage.allCookies, as: .json))) ?? .array([])),
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

    private struct PluginAnswer {
        var members: [(key: String, value: JSONValue)]
        func value(_ key: String) -> JSONValue? { members.last { $0.key == key }?.value }
    }

    private func parseAnswer(
        _ output: PluginOutput, timeout: Duration, failure: (String) -> FlowError
    ) throws(FlowError) -> PluginAnswer {
        let text = String(decoding: output.standardOutput, as: UTF8.self)
        let parsed = try? JSONText.parse(text)
        var reported: String?
        if case .object(let members)? = parsed, let error = members.last(where: { $0.key == "error" })?.value {
            if case .string(let message) = error { reported = message } else if error != .null { reported = error.serialized }
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
        if output.outputTruncated { throw failure("its output is larger than \(ProcessPluginRunner.maximumOutputSize) bytes") }
        guard let parsed else {
            let reason: String
            do { _ = try JSONText.parse(text); reason = "" } catch { reason = error.description }
            throw failure(text.isEmpty ? "it printed nothing (one JSON object expected on stdout)" : "its output is not JSON (\(reason))")
        }
        guard case .object(let members) = parsed else { throw failure("its output is JSON but not an object") }
        if let reported { throw failure(reported) }
        return PluginAnswer(members: members)
    }

    private func apply(
        _ answer: PluginAnswer, state: inout RunState, storage: CookieStorage, failure: (String) -> FlowError
    ) throws(FlowError) {
        let site = state.site
        if let vars = answer.value("vars"), vars != .null {
            guard case .object(let members) = vars else { throw failure("\"vars\" must be an object") }
            for member in members { state.setVariable(member.key, JSONPointer.text(of: member.value)) }
        }
        if let headers = answer.value("headers"), headers != .null {
            guard case .object(let members) = headers else { throw failure("\"headers\" must be an object") }
            for member in members {
                let value = JSONPointer.text(of: member.value)
                state.pluginHeaders.replaceOrAdd(name: member.key, value: value)
                state.masker.addSecret(value)
            }
        }
        if let cookies = answer.value("cookies"), cookies != .null {
            guard case .array = cookies else { throw failure("\"cookies\" must be an array in the json cookie format") }
            let decoded: [Cookie]
            do { decoded = try CookieCodec.decode(cookies.serialized, as: .json, url: site.baseURL, now: now()) } catch {
                throw failure("\"cookies\": \(error.description)")
            }
            // Masked whether stored or not: the plugin handed them over as session values. Stored under the
            // site's accept policy, like a response's cookies.
            for cookie in decoded { state.masker.addValue(cookie.value) }
            storage.setCookies(decoded, mainDocumentURL: site.baseURL)
        }
        if let lines = answer.value("set_cookie"), lines != .null {
            guard case .array(let items) = lines else { throw failure("\"set_cookie\" must be an array of strings") }
            var headers: [String] = []
            for item in items {
                guard case .string(let line) = item else { throw failure("\"set_cookie\" must be an array of strings") }
                headers.append(line)
            }
            for case .stored(let cookie) in storage.setCookies(fromHeaders: headers, for: site.baseURL, mainDocumentURL: site.baseURL) {
                state.masker.addValue(cookie.value)
            }
        }
    }
}
