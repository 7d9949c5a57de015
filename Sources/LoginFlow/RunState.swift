import CookieJar
import Foundation
import HTTPTransport
import JSON
import SiteConfig

/// The mutable state of one run: variables, resolved credentials, the last response, headers plugins
/// added, and everything that must be masked in messages.
struct RunState: Sendable {
    let site: SiteDefinition
    let environment: [String: String]
    var variables: [String: String] = [:]
    var credentials: [String: String] = [:]
    /// Credentials whose value is a one-time code, computed when a request carries it (``FlowEngine/stampOneTimeCodes``),
    /// which then puts the code in `credentials` for rendering.
    var oneTimeCodes: [String: any OneTimeCodeGenerator] = [:]
    var lastResponse: HTTPResponse?
    /// Headers a plugin returned: sent with every later request of the run.
    var pluginHeaders = HTTPHeaders()
    /// The User-Agent a plugin answered with (a browser's): later requests of the run send it, and it is
    /// the session's User-Agent.
    var sessionUserAgent: String?
    /// The localStorage a plugin answered with (`origins`), kept with the session.
    var storageOrigins: [StorageOrigin] = []
    var masker = SecretMasker()
    var timings: [StepTiming] = []
    /// The Set-Cookie headers the jar refused so far (name, the jar's reason, the redacted URL that sent it): a
    /// step that fails names them.
    var refusedCookies: [(name: String?, reason: String, url: String)] = []

    init(site: SiteDefinition, environment: [String: String]) {
        self.site = site
        self.environment = environment
        if case .steps(let steps) = site.login { timings.reserveCapacity(steps.count) }
        credentials.reserveCapacity(site.credentials.count)
    }

    /// Sets a variable (extracted or from a plugin) and remembers its value for masking.
    mutating func setVariable(_ name: String, _ value: String) {
        variables[name] = value
        masker.addValue(value)
    }

    /// Sets a variable whose value is a secret whatever its length (a prompt's answer: a six-digit code is one).
    mutating func setSecretVariable(_ name: String, _ value: String) {
        variables[name] = value
        masker.addSecret(value)
    }

    /// Whether ``prepare(_:provider:step:mark:)`` has anything to do for a variable name: only these are
    /// collected, so a step without credentials or environment variables allocates nothing.
    static func needsPreparation(_ name: String) -> Bool {
        name.hasPrefix("credentials.") || name.hasPrefix("env.")
    }

    /// Gets placeholders ready before rendering: resolves, once per run, every `credentials.NAME` that
    /// `visit` reports (a step's or plugin's `forEachVariable`), and adds the `env.NAME` values used to the
    /// masked secrets, in the order the names appear.
    mutating func prepare(
        _ visit: ((String) -> Void) -> Void, provider: any CredentialProvider, step: String?, mark: SourceMark?
    ) async throws(FlowError) {
        var names: [String] = []
        visit { if Self.needsPreparation($0) { names.append($0) } }
        for name in names {
            if name.hasPrefix("credentials.") {
                let credential = String(name.dropFirst("credentials.".count))
                try await resolveCredential(credential, provider: provider, step: step, mark: mark)
            } else if name.hasPrefix("env.") {
                // Checked here, before any request, as credentials are: a flow must not stop half-way for a
                // variable that was never there.
                let variable = String(name.dropFirst("env.".count))
                guard site.allowEnv.contains(variable) else {
                    throw FlowError(
                        kind: .template, site: site.name, step: step, mark: mark,
                        detail: "'{{ \(name) }}' reads the environment variable \(variable), which is not listed under allow_env:")
                }
                guard let value = environment[variable] else {
                    throw FlowError(
                        kind: .template, site: site.name, step: step, mark: mark,
                        detail: "environment variable \(variable) is not set; set it before logging in")
                }
                masker.addSecret(value)
            }
        }
    }

    mutating func resolveCredential(
        _ name: String, provider: any CredentialProvider, step: String?, mark: SourceMark?
    ) async throws(FlowError) {
        guard credentials[name] == nil, oneTimeCodes[name] == nil else { return }
        guard site.credential(named: name) != nil else {
            let declared = site.credentials.map(\.name).joined(separator: ", ")
            throw FlowError(
                kind: .template, site: site.name, step: step, mark: mark,
                detail: "'{{ credentials.\(name) }}' names no credential of the site (declared: \(declared.isEmpty ? "none" : declared))")
        }
        do {
            switch try await provider.credential(named: name, site: site.name) {
            case .fixed(let value):
                credentials[name] = value
                masker.addSecret(value)
            case .oneTimeCode(let generator):
                oneTimeCodes[name] = generator
            }
        } catch {
            let reason = (error as? CredentialUnavailable)?.reason ?? String(describing: error)
            throw FlowError(
                kind: .credential, site: site.name, step: step, mark: mark,
                detail: "credential '\(name)' is not available: \(masker.redact(reason))")
        }
    }

    /// The value of one placeholder. Credentials must have been resolved before.
    func lookup(_ name: String, step: String?, mark: SourceMark?) throws(FlowError) -> String {
        func failure(_ detail: String) -> FlowError {
            FlowError(kind: .template, site: site.name, step: step, mark: mark, detail: detail)
        }
        if name == "site.base_url" { return site.baseURL.absoluteString }
        if name == "site.name" { return site.name }
        if name.hasPrefix("credentials.") {
            let credential = String(name.dropFirst("credentials.".count))
            guard let value = credentials[credential] else { throw failure("credential '\(credential)' is not available") }
            return value
        }
        if name.hasPrefix("env.") {
            let variable = String(name.dropFirst("env.".count))
            guard site.allowEnv.contains(variable) else {
                throw failure("'{{ \(name) }}' reads the environment variable \(variable), which is not listed under allow_env:")
            }
            guard let value = environment[variable] else { throw failure("environment variable \(variable) is not set") }
            return value
        }
        if let value = variables[name] { return value }
        let known = variables.keys.sorted().joined(separator: ", ")
        throw failure("unknown variable '{{ \(name) }}' (defined so far: \(known.isEmpty ? "none" : known))")
    }

    func render(_ template: Template, step: String?, mark: SourceMark?) throws(FlowError) -> String {
        try template.render { (name: String) throws(FlowError) -> String in try lookup(name, step: step, mark: mark) }
    }

    func render(_ template: JSONTemplate, step: String?, mark: SourceMark?) throws(FlowError) -> JSONValue {
        try template.render { (name: String) throws(FlowError) -> String in try lookup(name, step: step, mark: mark) }
    }
}
