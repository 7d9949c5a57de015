import Foundation

/// `login:`, its steps, `check:` and `keepalive:`: one HTTP request each (or a plugin, in login).
extension SiteBuilder {
    // MARK: login

    /// The login, and its `done_when:` in `doneWhen`.
    mutating func buildLogin(
        _ login: Marked<SiteFile.LoginFile>?, scope: inout VariableScope, baseURL: URL?, doneWhen: inout [Expectation]
    ) -> Login? {
        guard let login else {
            checker.error(
                rootMark, "missing key 'login' (login: {steps: [...]}, login: {plugin: NAME} or login: manual)")
            return nil
        }
        switch login.value {
        case .word(let word):
            guard word.value == "manual" else {
                checker.error(word.mark, "login: '\(word.value)' is not a login; write 'manual' or a mapping with 'steps:' or 'plugin:'")
                return nil
            }
            return .manual
        case .mapping(let mapping, let node):
            if let steps = mapping.steps {
                if let plugin = mapping.plugin {
                    checker.error(plugin.keyMark, "login has both 'steps' and 'plugin'; a plugin login has no steps")
                }
                for (key, present) in [("with", mapping.with != nil), ("env", mapping.env != nil),
                    ("timeout", mapping.timeout != nil), ("pass_credentials", mapping.passCredentials != nil)] where present {
                    checker.error(login.mark, "login.\(key) applies only to a plugin login; put it on the step")
                }
                guard !steps.value.isEmpty else {
                    checker.error(steps.mark, "login.steps is empty; a login needs at least one step")
                    return nil
                }
                var built: [Step] = []
                for (index, step) in steps.value.enumerated() {
                    if let step = buildStep(step, index: index, scope: &scope, baseURL: baseURL) { built.append(step) }
                }
                if let given = mapping.doneWhen {
                    doneWhen = buildExpectations(given, key: "login", field: "done_when")
                }
                return .steps(built)
            }
            if let doneWhen = mapping.doneWhen {
                checker.error(doneWhen.keyMark, "login.done_when applies only to a login with steps")
            }
            if let plugin = mapping.plugin {
                let step = StepFile(
                    plugin: plugin, with: mapping.with, env: mapping.env, timeout: mapping.timeout,
                    passCredentials: mapping.passCredentials)
                return buildPlugin(step, key: "login", scope: scope).map(Login.plugin)
            }
            if let steps = node["steps"], steps.isNull {
                checker.error(steps.mark, "login.steps is empty; a login needs at least one step")
            } else if let plugin = node["plugin"], plugin.isNull {
                checker.error(plugin.mark, "login.plugin: empty plugin name")
            } else if node["steps"] == nil && node["plugin"] == nil {
                checker.error(login.mark, "login needs 'steps:' (a list of steps) or 'plugin:' (or write login: manual)")
            }
            return nil
        }
    }

    // MARK: steps

    /// The HTTP-only keys a step sets, for "does not apply" messages.
    static func requestKeys(of file: StepFile) -> [String] {
        [("headers", file.headers != nil), ("query", file.query != nil), ("form", file.form != nil),
         ("json", file.json != nil), ("body", file.body != nil), ("content_type", file.contentType != nil),
         ("form_from", file.formFrom != nil), ("follow_redirects", file.followRedirects != nil),
         ("handle_cookies", file.handleCookies != nil), ("extract", file.extract != nil), ("expect", file.expect != nil)]
            .filter(\.1).map(\.0)
    }

    /// The plugin-only keys a step sets.
    static func pluginKeys(of file: StepFile) -> [String] {
        [("with", file.with != nil), ("env", file.env != nil), ("timeout", file.timeout != nil),
         ("pass_credentials", file.passCredentials != nil), ("provides", file.provides != nil)]
            .filter(\.1).map(\.0)
    }

    private mutating func buildStep(_ marked: Marked<StepFile>, index: Int, scope: inout VariableScope, baseURL: URL?) -> Step? {
        let file = marked.value
        let name = file.name?.value ?? "step \(index + 1)"
        let key = file.name == nil ? name : "step '\(name)'"
        if let every = file.every {
            checker.error(every.keyMark, "\(key): 'every' applies only to check and keepalive")
        }
        var when: [Expectation]?
        if let given = file.when {
            if index == 0 {
                checker.error(given.keyMark, "\(key): 'when' judges the previous response, and the first step has none")
            } else {
                when = buildExpectations(given, key: key, field: "when")
            }
        }
        var step = buildAction(marked, file: file, name: name, key: key, scope: &scope, baseURL: baseURL)
        step?.when = when
        return step
    }

    private mutating func buildAction(
        _ marked: Marked<StepFile>, file: StepFile, name: String, key: String, scope: inout VariableScope, baseURL: URL?
    ) -> Step? {
        if let prompt = file.prompt {
            return buildPromptStep(prompt, in: file, name: name, key: key, mark: marked.mark, scope: &scope)
        }
        if file.plugin != nil {
            for method in methods(of: file) {
                checker.error(method.mark, "\(key): a step is an HTTP request or a plugin, not both ('\(method.name)' and 'plugin')")
            }
            for keyName in Self.requestKeys(of: file) {
                checker.error(marked.mark, "\(key): '\(keyName)' does not apply to a plugin step")
            }
            guard let step = buildPlugin(file, key: key, scope: scope) else { return nil }
            if let provides = file.provides {
                for variable in provides {
                    if Template.isValidVariableName(variable.value) && !variable.value.contains(".") {
                        scope.extracted.insert(variable.value)
                    } else {
                        checker.error(variable.mark, "\(key).provides: '\(variable.value)' is not a variable name")
                    }
                }
            } else {
                // The plugin may return any variable; later steps can use names this file cannot know.
                scope.open = true
            }
            return Step(name: name, mark: marked.mark, action: .plugin(step))
        }
        for keyName in Self.pluginKeys(of: file) {
            checker.error(marked.mark, "\(key): '\(keyName)' applies only to plugin steps")
        }
        guard let request = buildRequest(file, mark: marked.mark, key: key, scope: scope, baseURL: baseURL, allowFormFrom: true)
        else { return nil }
        for extraction in request.extract { scope.extracted.insert(extraction.name) }
        return Step(name: name, mark: marked.mark, action: .request(request))
    }

    mutating func buildProbe(_ marked: Marked<StepFile>, key: String, scope: VariableScope, baseURL: URL?) -> Probe? {
        let file = marked.value
        if let name = file.name { checker.error(name.keyMark, "\(key): 'name' applies only to login steps") }
        if let plugin = file.plugin { checker.error(plugin.keyMark, "\(key) is one HTTP request; plugins run only in login") }
        if let prompt = file.prompt { checker.error(prompt.keyMark, "\(key) is one HTTP request; prompts run only in login") }
        for keyName in Self.pluginKeys(of: file) where keyName != "timeout" {
            checker.error(marked.mark, "\(key): '\(keyName)' applies only to plugin steps")
        }
        if let timeout = file.timeout { checker.error(timeout.keyMark, "\(key): set timeouts under http:, not on \(key)") }
        if let formFrom = file.formFrom { checker.error(formFrom.keyMark, "\(key): form_from needs a previous response; use it in login steps") }
        if file.extract != nil { checker.error(marked.mark, "\(key): 'extract' applies only to login steps") }
        if let when = file.when { checker.error(when.keyMark, "\(key): 'when' applies only to login steps") }
        let defaultEvery = key == "check" ? Probe.defaultCheckInterval : Probe.defaultKeepaliveInterval
        let every = checker.positiveDuration(file.every, key: "\(key).every") ?? defaultEvery
        guard var request = buildRequest(file, mark: marked.mark, key: key, scope: scope, baseURL: baseURL, allowFormFrom: false)
        else { return nil }
        if key == "check" && request.expect.isEmpty {
            // A check without expectations still has to tell a live session from a dead one.
            request.expect = [Expectation(.status(Array(200...299)), mark: marked.mark)]
        }
        return Probe(request: request, every: every, mark: marked.mark)
    }

    /// A step's request line as written: a method key with its URL (`get: /login`) or `request: {method, url}`.
    enum RequestLine {
        case method(String, url: Marked<String>)
        case request(Marked<StepFile.RequestFile>)

        /// The key as written.
        var name: String {
            switch self {
            case .method(let name, _): name
            case .request: "request"
            }
        }

        /// Where the key is written.
        var mark: SourceMark {
            switch self {
            case .method(_, let url): url.keyMark
            case .request(let request): request.keyMark
            }
        }

        /// The URL as written, when there is one.
        var url: Marked<String>? {
            switch self {
            case .method(_, let url): url
            case .request(let request): request.value.url
            }
        }
    }

    /// Every request key a step sets, in SPEC order; more than one is an error.
    func methods(of file: StepFile) -> [RequestLine] {
        var found: [RequestLine] = []
        for (name, url) in [("get", file.get), ("post", file.post), ("put", file.put), ("patch", file.patch), ("delete", file.delete)] {
            if let url { found.append(.method(name, url: url)) }
        }
        if let request = file.request { found.append(.request(request)) }
        return found
    }

    private mutating func buildRequest(
        _ file: StepFile, mark: SourceMark, key: String, scope: VariableScope, baseURL: URL?, allowFormFrom: Bool
    ) -> RequestStep? {
        let before = checker.diagnostics.count
        var method: String?
        var url: Template?
        let found = methods(of: file)
        if found.count > 1 {
            let names = found.map { "'\($0.name)'" }.joined(separator: " and ")
            checker.error(found[1].mark, "\(key) has two methods, \(names); a step makes exactly one request")
        } else if let only = found.first {
            switch only {
            case .request(let request):
                if let methodValue = request.value.method {
                    if Checker.isToken(methodValue.value) {
                        method = methodValue.value.uppercased()
                    } else {
                        checker.error(methodValue.mark, "\(key): '\(methodValue.value)' is not an HTTP method")
                    }
                } else {
                    checker.error(request.mark, "\(key): request needs 'method'")
                }
                if let urlValue = request.value.url {
                    url = checker.template(urlValue, key: "\(key).request.url")
                    if let url { checker.stepURL(url, mark: urlValue.mark, key: "\(key).request.url", baseURL: baseURL) }
                } else {
                    checker.error(request.mark, "\(key): request needs 'url'")
                }
            case .method(let name, let value):
                method = name.uppercased()
                url = checker.template(value, key: "\(key).\(name)")
                if let url { checker.stepURL(url, mark: value.mark, key: "\(key).\(name)", baseURL: baseURL) }
            }
        } else if (file.formFrom == nil || !allowFormFrom) && file.plugin == nil {
            checker.error(mark, "\(key) needs a request: one of get, post, put, patch, delete, request (or plugin)")
        }

        let headers = namedTemplates(file.headers, key: "\(key).headers")
        for header in headers where !Checker.isToken(header.name) {
            checker.error(header.mark ?? mark, "\(key).headers: '\(header.name)' is not a valid header name")
        }
        let query = namedTemplates(file.query, key: "\(key).query")
        let body = buildBody(file, mark: mark, key: key)

        var request = RequestStep(
            method: method, url: url, headers: headers, query: query, body: body,
            followRedirects: file.followRedirects?.value ?? true, handleCookies: file.handleCookies?.value ?? true)
        request.extract = buildExtractions(file.extract, key: key)
        if let expect = file.expect { request.expect = buildExpectations(expect, key: key) }
        for expectation in request.expect {
            // A followed redirect is never the last response, so such a step could never pass.
            guard case .status(let codes) = expectation.kind, request.followRedirects, !codes.isEmpty,
                codes.allSatisfy(Self.followedRedirectStatuses.contains)
            else { continue }
            checker.error(
                expectation.mark ?? mark,
                "\(key) expects a redirect status but follows redirects, so it only sees the final response; add follow_redirects: false")
        }

        // Variables are checked against what is known before this step's own extractions.
        var uses: [(String, SourceMark)] = []
        if let url, let urlMark = found.first?.url?.mark {
            uses += url.variables.map { ($0, urlMark) }
        }
        for entry in headers + query { uses += entry.value.variables.map { ($0, entry.mark ?? mark) } }
        if let body {
            let bodyMark = file.form?.mark ?? file.json?.node.mark ?? file.body?.mark ?? file.formFrom?.mark ?? mark
            switch body {
            case .form(let fields), .formFrom(_, let fields):
                for field in fields { uses += field.value.variables.map { ($0, field.mark ?? bodyMark) } }
            default:
                uses += body.variables.map { ($0, bodyMark) }
            }
        }
        for (variable, useMark) in uses { checkVariable(variable, at: useMark, key: key, scope: scope) }
        return checker.diagnostics.count == before ? request : nil
    }

    private mutating func namedTemplates(_ map: OrderedMap<Marked<String>>?, key: String) -> [NamedTemplate] {
        (map?.entries ?? []).compactMap { entry in
            guard let template = checker.template(entry.value, key: "\(key).\(entry.key)") else { return nil }
            return NamedTemplate(name: entry.key, value: template, mark: entry.value.mark)
        }
    }

    private mutating func buildBody(_ file: StepFile, mark: SourceMark, key: String) -> RequestBody? {
        var bodies: [(String, SourceMark)] = []
        if let form = file.form, file.formFrom == nil { bodies.append(("form", form.keyMark)) }
        if let json = file.json { bodies.append(("json", json.keyMark)) }
        if let body = file.body { bodies.append(("body", body.keyMark)) }
        if let formFrom = file.formFrom { bodies.append(("form_from", formFrom.keyMark)) }
        if bodies.count > 1 {
            let names = bodies.map { "'\($0.0)'" }.joined(separator: " and ")
            checker.error(bodies[1].1, "\(key) has two bodies, \(names); give one")
            return nil
        }
        if let contentType = file.contentType, file.body == nil {
            checker.error(contentType.keyMark, "\(key): content_type applies only with 'body'")
        }
        if let formFrom = file.formFrom {
            guard let xpath = formFrom.value.xpath else {
                checker.error(formFrom.mark, "\(key).form_from needs 'xpath' (which form of the previous page)")
                return nil
            }
            checker.xpath(xpath, key: "\(key).form_from.xpath")
            let overrides = namedTemplates(file.form?.value, key: "\(key).form")
            return .formFrom(xpath: xpath.value, overrides: overrides)
        }
        if let form = file.form { return .form(namedTemplates(form.value, key: "\(key).form")) }
        if let json = file.json { return .json(checker.jsonTemplate(json.node, key: "\(key).json")) }
        if let body = file.body {
            guard let template = checker.template(body, key: "\(key).body") else { return nil }
            if let contentType = file.contentType, !contentType.value.contains("/") {
                checker.error(contentType.mark, "\(key).content_type: '\(contentType.value)' is not a media type such as text/xml")
            }
            return .raw(template, contentType: file.contentType?.value)
        }
        return nil
    }
}
