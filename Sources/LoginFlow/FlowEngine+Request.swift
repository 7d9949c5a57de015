import CookieJar
import Foundation
import HTTPTransport
import Locking
import SiteConfig
import XMLQuery

extension FlowEngine {
    /// Runs one HTTP step: builds the request, sends it and its redirects hop by hop with the jar's
    /// cookies, then checks `expect:` and fills `extract:` from the last response, unless that response
    /// meets `doneWhen` (a login's `done_when:`), which ends the login there (``StepTiming/endedLogin``).
    ///
    /// A one-time code (TOTP) the step carries is computed here, as the request is built; when the step's
    /// expectation fails and the code was sent at its period's end, the step runs once more with the next
    /// period's code before the login counts as refused.
    func perform(
        _ step: RequestStep, name: String, mark: SourceMark, state: inout RunState, storage: CookieStorage,
        observer: FlowObserver?, doneWhen: [Expectation] = []
    ) async throws(FlowError) -> StepTiming {
        try await state.prepare({ step.forEachVariable($0) }, provider: credentials, step: name, mark: mark)
        let codes = try await stampOneTimeCodes({ step.forEachVariable($0) }, step: name, mark: mark, state: &state, observer: observer)
        do throws(FlowError) {
            return try await send(step, name: name, mark: mark, state: &state, storage: storage, observer: observer, doneWhen: doneWhen)
        } catch {
            guard case .expectationFailed = error.kind, let late = codes.first(where: { $0.nearBoundary(answeredAt: now()) }) else {
                throw error
            }
            observer?(.notice(
                site: state.site.name, step: name,
                message: "the site refused the '\(late.credential)' code sent at the end of its period; "
                    + "trying once more with the next period's code"))
            _ = try await stampOneTimeCodes({ step.forEachVariable($0) }, step: name, mark: mark, state: &state, observer: observer)
            return try await send(step, name: name, mark: mark, state: &state, storage: storage, observer: observer, doneWhen: doneWhen)
        }
    }

    /// One attempt of ``perform(_:name:mark:state:storage:observer:doneWhen:)``: the request built from the variables
    /// and codes as they are now.
    private func send(
        _ step: RequestStep, name: String, mark: SourceMark, state: inout RunState, storage: CookieStorage,
        observer: FlowObserver?, doneWhen: [Expectation]
    ) async throws(FlowError) -> StepTiming {
        // Fields, not the whole SiteDefinition: a copy of it retains and releases every one of its members.
        let siteName = state.site.name
        let baseURL = state.site.baseURL
        let http = state.site.http
        let started = ContinuousClock.now
        var request = try buildRequest(step, name: name, mark: mark, state: state)
        var credentialParts = Self.credentialParts(of: step, pluginHeaders: state.pluginHeaders)
        var options = TransportOptions(site: http)
        if let userAgent = state.sessionUserAgent { options.userAgent = userAgent }
        let maxRedirects = http.maxRedirects ?? Self.defaultMaxRedirects
        var hop = 0
        var response: HTTPResponse
        // Each cookie once by name, host and path; shown by name, with its host where two hosts' share it.
        var cookiesStored: [Cookie] = []

        while true {
            try checkCancellation(site: siteName, step: name)
            // `request` keeps only the step's own Cookie header (dropped by RedirectRule on another origin);
            // the jar's cookies for this hop's URL are added to the copy that is sent.
            var sent = request
            if step.handleCookies, let jarCookies = storage.cookieHeader(for: request.url) {
                let own = sent.headers["Cookie"]
                sent.headers.replaceOrAdd(name: "Cookie", value: own.map { "\($0); \(jarCookies)" } ?? jarCookies)
            }
            if tracesExchanges { observer?(.requestTrace(ExchangeTracer.request(sent, site: siteName, step: name, masker: state.masker))) }
            let hopStarted = ContinuousClock.now
            do {
                response = try await client.send(sent, options: options)
            } catch {
                // The headline already says what happened ("cannot connect to the server"): the detail adds where and
                // libcurl's own words.
                let place = error.url?.redactedForLog ?? sent.url.redactedForLog
                throw FlowError(
                    kind: .transport(error.kind), site: siteName, step: name, mark: mark,
                    detail: state.masker.redact(error.message.isEmpty ? place : "\(place): \(error.message)"))
            }
            if step.handleCookies {
                let setCookieFields = response.headers.fields(named: "Set-Cookie")
                if !setCookieFields.isEmpty {
                    let before = tracesExchanges ? storage.allCookies : []
                    let decisions = Self.store(setCookieFields, in: storage, from: response.url, mainDocumentURL: baseURL)
                    // A Set-Cookie already expired deletes a cookie (a logout's): that is no refusal worth naming.
                    for case .rejected(let cookieName, let reason) in decisions where !reason.hasPrefix("already expired") {
                        state.refusedCookies.append((cookieName, reason, response.url.redactedForLog))
                    }
                    for case .stored(let cookie) in decisions {
                        state.masker.addValue(cookie.value)
                        if !cookiesStored.contains(where: { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }) {
                            cookiesStored.append(cookie)
                        }
                    }
                    if tracesExchanges {
                        for trace in ExchangeTracer.cookies(decisions, before: before, after: storage.allCookies, site: siteName, step: name) {
                            observer?(.cookieTrace(trace))
                        }
                    }
                }
            }
            if tracesExchanges { observer?(.responseTrace(ExchangeTracer.response(response, site: siteName, step: name, masker: state.masker))) }
            if let observer {
                let query = URLComponents(url: sent.url, resolvingAgainstBaseURL: false)?.percentEncodedQuery
                observer(.exchange(FlowEvent.Exchange(
                    site: siteName, step: name, method: sent.method, url: sent.url.redactedForLog, status: response.status,
                    duration: ContinuousClock.now - hopStarted, redirectHop: hop,
                    queryNames: Self.queryNames(query).map { state.masker.redact($0) },
                    maskedQuery: tracesExchanges ? query.map { state.masker.redact($0) } : nil)))
            }

            guard step.followRedirects, response.isRedirect else { break }
            guard hop < maxRedirects else {
                throw FlowError(
                    kind: .redirect, site: siteName, step: name, mark: mark,
                    expected: "at most \(maxRedirects) redirects (http.max_redirects)", found: "another \(response.status)",
                    response: FlowError.ResponseSummary(response, masker: state.masker))
            }
            do {
                (request, credentialParts) = try RedirectRule.next(after: request, response: response, credentials: credentialParts)
            } catch {
                throw FlowError(
                    kind: .redirect, site: siteName, step: name, mark: mark, detail: error.message,
                    response: FlowError.ResponseSummary(response, masker: state.masker))
            }
            hop += 1
        }

        state.lastResponse = response
        let cookiesSet = cookiesStored.isEmpty ? [] : Cookie.labels(cookiesStored, among: storage.allCookies)
        if !doneWhen.isEmpty, unmetCondition(doneWhen, response: response, storage: storage, masker: state.masker) == nil {
            return StepTiming(
                step: name, duration: ContinuousClock.now - started, requests: hop + 1, status: response.status,
                cookiesSet: cookiesSet, endedLogin: true)
        }
        do {
            try inspect(step, response: response, name: name, mark: mark, state: &state, storage: storage)
        } catch {
            throw Self.namingRefusedCookies(error, refused: state.refusedCookies, masker: state.masker)
        }
        return StepTiming(
            step: name, duration: ContinuousClock.now - started, requests: hop + 1, status: response.status, cookiesSet: cookiesSet)
    }

    /// `error` with, when the jar refused cookies of the run's answers so far, which ones and why (the last three,
    /// then how many more): without it, a chain that broke on a refused cookie (a provider's CSRF cookie refused
    /// by `accept: main-document-domain`, its form then answered 403) shows only the status that followed.
    static func namingRefusedCookies(
        _ error: FlowError, refused: [(name: String?, reason: String, url: String)], masker: SecretMasker
    ) -> FlowError {
        guard !refused.isEmpty else { return error }
        var named = refused.suffix(3).map { entry in
            "cookie \(entry.name.map { "'\($0)'" } ?? "(unnamed)") from \(entry.url) was refused: \(masker.redact(entry.reason))"
                + (entry.reason.contains("main document's registrable domain")
                    ? " (cookies.accept: main-document-domain; a login across hosts needs accept: always)" : "")
        }
        if refused.count > 3 { named.append("\(refused.count - 3) more refused") }
        var error = error
        let note = named.joined(separator: "; ")
        error.detail = error.detail.map { "\($0); \(note)" } ?? note
        return error
    }

    /// The first of `conditions` (a `when:` or `done_when:`, the keys of `expect:`) that `response` does not meet,
    /// masked, or nil when it meets them all. As for `expect:`, a response of status 400 or more meets no
    /// conditions that do not name its status.
    func unmetCondition(
        _ conditions: [Expectation], response: HTTPResponse, storage: CookieStorage, masker: SecretMasker
    ) -> ResponseInspection.Mismatch? {
        if response.status >= 400, !conditions.contains(where: { if case .status = $0.kind { true } else { false } }) {
            return ResponseInspection.Mismatch(expected: "a status below 400 (no status: given)", found: "status \(response.status)")
        }
        let parsed = ResponseInspection.ParsedResponse(response)
        for condition in conditions {
            do {
                try ResponseInspection.check(condition.kind, response: parsed, storage: storage, now: now())
            } catch {
                return ResponseInspection.Mismatch(expected: masker.redact(error.expected), found: masker.redact(error.found))
            }
        }
        return nil
    }

    /// The names of a percent-encoded query's parameters, decoded, in order.
    static func queryNames(_ query: String?) -> [String] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&").map { pair in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            return name.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? name
        }
    }

    /// Expectations first (a failed login page then reads "expected status 303, found 200" rather than
    /// "no csrf field"), then extractions in file order.
    private func inspect(
        _ step: RequestStep, response: HTTPResponse, name: String, mark: SourceMark, state: inout RunState,
        storage: CookieStorage
    ) throws(FlowError) {
        let siteName = state.site.name
        // SPEC section 3: without `expect: {status: ...}` a final 4xx or 5xx fails the step, as `curl --fail`
        // does (a site answering 503 everywhere is down, not "logged in with no cookies").
        if response.status >= 400, !step.expect.contains(where: { if case .status = $0.kind { true } else { false } }) {
            throw FlowError(
                kind: .expectationFailed, site: siteName, step: name, mark: mark,
                expected: "a status below 400 (the step has no expect: status)", found: "status \(response.status)",
                response: FlowError.ResponseSummary(response, masker: state.masker))
        }
        let parsed = ResponseInspection.ParsedResponse(response)
        for expectation in step.expect {
            do {
                try ResponseInspection.check(expectation.kind, response: parsed, storage: storage, now: now())
            } catch {
                throw FlowError(
                    kind: .expectationFailed, site: siteName, step: name, mark: expectation.mark ?? mark,
                    expected: state.masker.redact(error.expected), found: state.masker.redact(error.found),
                    response: FlowError.ResponseSummary(response, masker: state.masker))
            }
        }
        for entry in step.extract {
            do {
                let value = try ResponseInspection.extract(entry.extraction, from: parsed, storage: storage, now: now())
                state.setVariable(entry.name, value)
            } catch {
                throw FlowError(
                    kind: .extractionFailed, site: siteName, step: name, mark: entry.mark ?? mark,
                    expected: "\(state.masker.redact(error.expected)) for variable '\(entry.name)'",
                    found: state.masker.redact(error.found),
                    response: FlowError.ResponseSummary(response, masker: state.masker))
            }
        }
    }

    /// The parts of `step`'s request built from credentials, which a redirect must not carry to another origin
    /// (SPEC section 3): headers and a body whose templates name `credentials.*` (TOTP codes included) or
    /// `env.*` (both masked as secrets), and the headers plugins returned (masked as secrets too), unless the
    /// step sets that header itself from nothing secret.
    static func credentialParts(of step: RequestStep, pluginHeaders: HTTPHeaders) -> RedirectRule.CredentialParts {
        func isSecret(_ template: Template) -> Bool {
            var found = false
            template.forEachVariable { if RunState.needsPreparation($0) { found = true } }
            return found
        }
        var headers = Set(pluginHeaders.map { $0.name.lowercased() })
        for header in step.headers {
            if isSecret(header.value) { headers.insert(header.name.lowercased()) } else { headers.remove(header.name.lowercased()) }
        }
        var body = false
        step.body?.forEachVariable { if RunState.needsPreparation($0) { body = true } }
        return RedirectRule.CredentialParts(headers: headers, body: body)
    }

    // MARK: Building the request

    func buildRequest(_ step: RequestStep, name: String, mark: SourceMark, state: RunState) throws(FlowError) -> HTTPRequest {
        let siteName = state.site.name
        func invalid(_ detail: String) -> FlowError {
            FlowError(kind: .invalidRequest, site: siteName, step: name, mark: mark, detail: detail)
        }

        var method = step.method ?? "GET"
        var url: URL?
        if let template = step.url {
            let text = try state.render(template, step: name, mark: mark)
            let hasPlaceholder = template.segments.contains { if case .variable = $0 { true } else { false } }
            url = try resolve(text, base: state.site.baseURL, cacheable: !hasPlaceholder, invalid: invalid)
        }

        var headers = HTTPHeaders()
        // Room for the Content-Type and the Cookie header added later too.
        headers.reserveCapacity(state.site.http.headers.count + state.pluginHeaders.count + step.headers.count + 2)
        for header in state.site.http.headers { headers.replaceOrAdd(name: header.name, value: header.value) }
        for field in state.pluginHeaders { headers.replaceOrAdd(name: field.name, value: field.value) }
        for header in step.headers {
            headers.replaceOrAdd(name: header.name, value: try state.render(header.value, step: name, mark: header.mark ?? mark))
        }

        var body: Data?
        var contentType: String?
        switch step.body {
        case nil:
            break
        case .form(let fields):
            var pairs: [(name: String, value: String)] = []
            for field in fields { pairs.append((field.name, try state.render(field.value, step: name, mark: field.mark ?? mark))) }
            body = FormEncoding.urlEncodedData(pairs)
            contentType = HTMLForm.urlEncoded
        case .json(let template):
            body = Data(try state.render(template, step: name, mark: mark).serialized.utf8)
            contentType = "application/json"
        case .raw(let template, let type):
            body = Data(try state.render(template, step: name, mark: mark).utf8)
            contentType = type ?? "text/plain; charset=utf-8"
        case .formFrom(let xpath, let overrides):
            guard let previous = state.lastResponse else {
                throw invalid("form_from needs the previous step's HTML response, and no HTTP step ran before")
            }
            var form: HTMLForm
            do {
                let contentType = previous.headers["Content-Type"]?.lowercased() ?? ""
                let charset = contentType.range(of: "charset=").map {
                    String(contentType[$0.upperBound...].prefix { $0 != ";" }).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
                }
                form = try XMLQuery.Document.html(previous.body, url: previous.url, encoding: charset).form(xpath)
            } catch {
                throw FlowError(
                    kind: .extractionFailed, site: siteName, step: name, mark: mark,
                    expected: "an HTML form selected by \(xpath) in the previous response", found: error.description,
                    response: FlowError.ResponseSummary(previous, masker: state.masker))
            }
            for override in overrides {
                form.set(override.name, to: try state.render(override.value, step: name, mark: override.mark ?? mark))
            }
            if step.method == nil { method = form.method }
            let pairs = form.fields.map { (name: $0.name, value: $0.value) }
            let target = url ?? form.action
            if method == "GET" || method == "HEAD" {
                guard let withQuery = FormEncoding.replacingQuery(of: target, with: pairs) else {
                    throw invalid("cannot put the form's fields into the query of \(target.redactedForLog)")
                }
                url = withQuery
            } else {
                url = target
                if form.encoding == "multipart/form-data" {
                    let multipart = FormEncoding.multipart(pairs)
                    body = multipart.body
                    contentType = multipart.contentType
                } else {
                    body = Data(FormEncoding.urlEncoded(pairs).utf8)
                    contentType = HTMLForm.urlEncoded
                }
            }
        }

        guard var finalURL = url else { throw invalid("the step has no URL") }
        if !step.query.isEmpty {
            var items: [(name: String, value: String)] = []
            for item in step.query { items.append((item.name, try state.render(item.value, step: name, mark: item.mark ?? mark))) }
            guard let withQuery = FormEncoding.appendingQuery(items, to: finalURL) else {
                throw invalid("cannot add the query to \(finalURL.redactedForLog)")
            }
            finalURL = withQuery
        }
        if let contentType, !headers.contains("Content-Type") { headers.add(name: "Content-Type", value: contentType) }
        // Methods are upper case as parsed; uppercased() would copy the string on every request.
        let upperMethod = method.utf8.contains(where: { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") }) ? method.uppercased() : method
        return HTTPRequest(method: upperMethod, url: finalURL, headers: headers, body: body)
    }

    /// A step URL: absolute, or relative to `base_url`; http and https only.
    ///
    /// `cacheable`: the text comes from a template without placeholders, so it holds no rendered value
    /// (credential, extracted token) and may be remembered for later runs.
    private func resolve(
        _ text: String, base: URL, cacheable: Bool, invalid: (String) -> FlowError
    ) throws(FlowError) -> URL {
        // Literal step URLs repeat on every run: the result depends only on the text and the base, and
        // Foundation's parse and absoluteURL cost more than the lookup.
        if cacheable, let known = resolvedURLs.url(for: text, base: base) { return known }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let url = URL(string: trimmed, relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil
        else {
            // The text may hold a rendered secret: show only that it was invalid.
            throw invalid("the step's URL is not a valid http(s) URL, absolute or relative to base_url")
        }
        if cacheable { resolvedURLs.remember(url, for: text, base: base) }
        return url
    }

    /// A response's Set-Cookie fields through the storage, in order. A field whose bytes were not UTF-8 is
    /// refused with that reason instead of being stored as the other bytes its decoded text would give.
    static func store(_ fields: [HTTPHeaders.Field], in storage: CookieStorage, from url: URL, mainDocumentURL: URL) -> [CookieDecision] {
        // Nearly always every field is UTF-8: one call, as the storage likes it.
        guard fields.contains(where: { !$0.valueIsUTF8 }) else {
            return storage.setCookies(fromHeaders: fields.map(\.value), for: url, mainDocumentURL: mainDocumentURL)
        }
        return fields.flatMap { field in
            field.valueIsUTF8
                ? storage.setCookies(fromHeaders: [field.value], for: url, mainDocumentURL: mainDocumentURL)
                : [CookieStorage.refusedAsNotUTF8(field.value)]
        }
    }
}

/// Literal step URLs already resolved against a base URL (valid ones only), and redacted forms of final
/// URLs, shared by every run of one engine.
///
/// Holds no secret: only URLs written in site files without placeholders, and final URLs without query,
/// user info or fragment (whose redacted form, shown in logs, is the whole URL). Bounded by ``capacity``
/// entries each, after which a table starts over.
final class ResolvedURLCache: Sendable {
    /// Distinct URLs kept per table; a site has a handful, a daemon a few hundred.
    static let capacity = 512

    private struct Entry {
        var base: URL
        var url: URL
    }

    private let entries = Locked<[String: Entry]>([:])
    /// `URL.redactedForLog` of final URLs (URLComponents work, ~1% of a login's CPU), same bound.
    private let redactions = Locked<[URL: String]>([:])

    init() {}

    /// `url.redactedForLog`, remembered when the URL has nothing the redaction removes.
    func redacted(_ url: URL) -> String {
        if let known = redactions.withLock({ $0[url] }) { return known }
        let text = url.redactedForLog
        guard url.query == nil, url.fragment == nil, url.user == nil, url.password == nil else { return text }
        redactions.withLock { redactions in
            if redactions.count >= Self.capacity { redactions.removeAll(keepingCapacity: true) }
            redactions[url] = text
        }
        return text
    }

    func url(for text: String, base: URL) -> URL? {
        entries.withLock { entries in
            guard let entry = entries[text], entry.base == base else { return nil }
            return entry.url
        }
    }

    func remember(_ url: URL, for text: String, base: URL) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[text] = Entry(base: base, url: url)
        }
    }
}
