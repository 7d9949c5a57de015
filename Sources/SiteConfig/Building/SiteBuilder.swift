import Foundation

/// Turns a decoded ``SiteFile`` into a ``SiteDefinition``: applies defaults and the config's
/// `defaults:`, resolves paths and plugins, and checks everything SPEC section 3 requires.
struct SiteBuilder {
    /// `[a-z0-9][a-z0-9._-]{0,62}` (SPEC section 1).
    static let maximumNameLength = 63
    static let httpMethods = ["get", "post", "put", "patch", "delete"]
    /// Redirects that a step following redirects never ends on (RFC 9110 section 15.4).
    static let followedRedirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    let file: String
    let rootMark: SourceMark
    let defaults: SiteDefaults
    let pluginsDirectory: String
    var checker: Checker

    init(file: String, rootMark: SourceMark, defaults: SiteDefaults, pluginsDirectory: String, environment: [String: String]) {
        self.file = file
        self.rootMark = rootMark
        self.defaults = defaults
        self.pluginsDirectory = pluginsDirectory
        checker = Checker(file: file, environment: environment)
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= maximumNameLength else { return false }
        func allowed(_ scalar: Unicode.Scalar, extra: Bool) -> Bool {
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || (extra && ".-_".unicodeScalars.contains(scalar))
        }
        return allowed(first, extra: false) && name.unicodeScalars.allSatisfy { allowed($0, extra: true) }
    }

    mutating func build(_ site: SiteFile) -> SiteDefinition? {
        let name = buildName(site.name)
        let baseURL: URL?
        if let value = site.baseURL {
            baseURL = checker.absoluteURL(value, key: "base_url")
        } else {
            checker.error(rootMark, "missing key 'base_url' (the site's address, such as https://wiki.example.com)")
            baseURL = nil
        }
        let http = buildHTTP(site.http)
        let credentials = buildCredentials(site.credentials)
        let allowEnv = buildAllowEnv(site.allowEnv)
        var scope = VariableScope(
            credentials: credentials.map(\.name), allowEnv: allowEnv, extracted: [], open: false)

        let login = buildLogin(site.login, scope: &scope, baseURL: baseURL)
        let probeScope = VariableScope(credentials: credentials.map(\.name), allowEnv: allowEnv, extracted: [], open: false)
        let check = site.check.flatMap { buildProbe($0, key: "check", scope: probeScope, baseURL: baseURL) }
        let keepalive = site.keepalive.flatMap { buildProbe($0, key: "keepalive", scope: probeScope, baseURL: baseURL) }
        let refresh = buildRefresh(site.refresh, defaults: defaults.refresh)
        let cookies = buildCookies(site.cookies)
        var outputs: [OutputFile] = []
        for output in site.outputs ?? [] {
            if let built = buildOutput(output) { outputs.append(built) }
        }
        let access = AccessPolicy(
            uids: (site.access?.uids ?? []).map(\.value),
            groups: (site.access?.groups ?? []).compactMap { group in
                guard !group.value.isEmpty else {
                    checker.error(group.mark, "access.groups: empty group name")
                    return nil
                }
                return group.value
            })
        if let description = site.description, description.value.contains("\n") {
            checker.error(description.mark, "description: keep it to one line")
        }

        guard checker.diagnostics.isEmpty, let name, let baseURL, let login else { return nil }
        return SiteDefinition(
            name: name, file: file, description: site.description?.value, baseURL: baseURL, http: http,
            credentials: credentials, login: login, check: check, keepalive: keepalive, refresh: refresh,
            cookies: cookies, outputs: outputs, access: access, enabled: site.enabled?.value ?? true,
            allowEnv: allowEnv)
    }

    private mutating func buildName(_ value: Marked<String>?) -> String? {
        let name: String
        let mark: SourceMark
        if let value {
            name = value.value
            mark = value.mark
        } else {
            let base = (file as NSString).lastPathComponent
            name = (base as NSString).deletingPathExtension
            mark = rootMark
        }
        guard SiteBuilder.isValidName(name) else {
            let origin = value == nil ? "the file name gives the site name '\(name)', which" : "name '\(name)'"
            checker.error(
                mark, "\(origin) does not match [a-z0-9][a-z0-9._-]{0,62} (lower-case letters, digits, '.', '_', '-'; at most 63)")
            return nil
        }
        return name
    }

    // MARK: http

    /// The site's `http:` over the config's `defaults.http`: a key the site sets wins; headers merge
    /// by case-insensitive name.
    private mutating func buildHTTP(_ http: SiteFile.HTTPFile?) -> HTTPSettings {
        var settings = defaults.http
        guard let http else { return settings }
        let own = HTTPBuilder.build(http, checker: &checker)
        if http.timeout != nil { settings.timeout = own.timeout }
        if http.connectTimeout != nil { settings.connectTimeout = own.connectTimeout }
        if http.userAgent != nil { settings.userAgent = own.userAgent }
        for header in own.headers {
            settings.headers.removeAll { $0.name.lowercased() == header.name.lowercased() }
            settings.headers.append(header)
        }
        if http.proxy != nil { settings.proxy = own.proxy }
        if http.resolve != nil { settings.resolve = own.resolve }
        if http.caFile != nil { settings.caFile = own.caFile }
        if http.clientCert != nil { settings.clientCertificate = own.clientCertificate }
        if http.insecure != nil { settings.insecure = own.insecure }
        if http.httpVersion != nil { settings.httpVersion = own.httpVersion }
        if http.maxRedirects != nil { settings.maxRedirects = own.maxRedirects }
        return settings
    }

    // MARK: credentials, allow_env

    private mutating func buildCredentials(_ credentials: Marked<OrderedMap<SiteFile.CredentialFile>>?) -> [CredentialEntry] {
        guard let credentials else { return [] }
        var entries: [CredentialEntry] = []
        for entry in credentials.value.entries {
            guard Template.isValidVariableName(entry.key), !entry.key.contains(".") else {
                checker.error(entry.keyMark, "credential name '\(entry.key)' is not a word (letters, digits, '_', '-')")
                continue
            }
            let source: CredentialSource?
            switch entry.value {
            case .literal(let value):
                source = .literal(value.value)
            case .source(let marked):
                source = buildCredentialSource(marked, name: entry.key)
            }
            if let source { entries.append(CredentialEntry(name: entry.key, source: source, mark: entry.keyMark)) }
        }
        return entries
    }

    private mutating func buildCredentialSource(_ marked: Marked<SiteFile.CredentialSourceFile>, name: String) -> CredentialSource? {
        let file = marked.value
        let present = [file.secret != nil, file.env != nil, file.file != nil, file.command != nil, file.totp != nil]
            .filter { $0 }.count
        let key = "credentials.\(name)"
        guard present == 1 else {
            checker.error(
                marked.mark,
                present == 0
                    ? "\(key): give a value or exactly one of secret, env, file, command, totp"
                    : "\(key): give exactly one of secret, env, file, command, totp")
            return nil
        }
        if let secret = file.secret {
            guard !secret.value.isEmpty else {
                checker.error(secret.mark, "\(key).secret: empty secret name")
                return nil
            }
            return .secret(secret.value)
        }
        if let env = file.env {
            guard Checker.isEnvironmentName(env.value) else {
                checker.error(env.mark, "\(key).env: '\(env.value)' is not an environment variable name")
                return nil
            }
            return .environment(env.value)
        }
        if let path = file.file {
            return checker.nonEmptyPath(path, key: "\(key).file").map { .file(path: $0) }
        }
        if let command = file.command {
            guard let program = command.value.first, !program.isEmpty else {
                checker.error(command.mark, "\(key).command: give the program and its arguments as a list, such as [pass, show, wiki]")
                return nil
            }
            return .command(command.value)
        }
        if let totp = file.totp {
            let value = totp.value
            guard let secret = value.secret, !secret.value.isEmpty else {
                checker.error(totp.mark, "\(key).totp: missing key 'secret' (the vault item holding the base32 seed)")
                return nil
            }
            var parameters = TOTPParameters(secretName: secret.value)
            if let digits = value.digits {
                if (6...8).contains(digits.value) {
                    parameters.digits = digits.value
                } else {
                    checker.error(digits.mark, "\(key).totp.digits: \(digits.value) is outside 6...8 (RFC 4226)")
                }
            }
            if let period = checker.positiveDuration(value.period, key: "\(key).totp.period") {
                parameters.period = period
            }
            if let algorithm = checker.choice(value.algorithm, TOTPParameters.Algorithm.self, key: "\(key).totp.algorithm") {
                parameters.algorithm = algorithm
            }
            return .totp(parameters)
        }
        return nil
    }

    private mutating func buildAllowEnv(_ names: [Marked<String>]?) -> [String] {
        (names ?? []).compactMap { name in
            guard Checker.isEnvironmentName(name.value) else {
                checker.error(name.mark, "allow_env: '\(name.value)' is not an environment variable name")
                return nil
            }
            return name.value
        }
    }

    // MARK: login

    private mutating func buildLogin(_ login: Marked<SiteFile.LoginFile>?, scope: inout VariableScope, baseURL: URL?) -> Login? {
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
                return .steps(built)
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
    private static func requestKeys(of file: StepFile) -> [String] {
        [("headers", file.headers != nil), ("query", file.query != nil), ("form", file.form != nil),
         ("json", file.json != nil), ("body", file.body != nil), ("content_type", file.contentType != nil),
         ("form_from", file.formFrom != nil), ("follow_redirects", file.followRedirects != nil),
         ("handle_cookies", file.handleCookies != nil), ("extract", file.extract != nil), ("expect", file.expect != nil)]
            .filter(\.1).map(\.0)
    }

    /// The plugin-only keys a step sets.
    private static func pluginKeys(of file: StepFile) -> [String] {
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

    private mutating func buildProbe(_ marked: Marked<StepFile>, key: String, scope: VariableScope, baseURL: URL?) -> Probe? {
        let file = marked.value
        if let name = file.name { checker.error(name.keyMark, "\(key): 'name' applies only to login steps") }
        if let plugin = file.plugin { checker.error(plugin.keyMark, "\(key) is one HTTP request; plugins run only in login") }
        for keyName in Self.pluginKeys(of: file) where keyName != "timeout" {
            checker.error(marked.mark, "\(key): '\(keyName)' applies only to plugin steps")
        }
        if let timeout = file.timeout { checker.error(timeout.keyMark, "\(key): set timeouts under http:, not on \(key)") }
        if let formFrom = file.formFrom { checker.error(formFrom.keyMark, "\(key): form_from needs a previous response; use it in login steps") }
        if file.extract != nil { checker.error(marked.mark, "\(key): 'extract' applies only to login steps") }
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

    private func methods(of file: StepFile) -> [(name: String, mark: SourceMark)] {
        var found: [(String, SourceMark)] = []
        for (name, value) in [("get", file.get), ("post", file.post), ("put", file.put), ("patch", file.patch), ("delete", file.delete)] {
            if let value { found.append((name, value.keyMark)) }
        }
        if let request = file.request { found.append(("request", request.keyMark)) }
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
            if only.name == "request", let request = file.request {
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
            } else {
                let value = [file.get, file.post, file.put, file.patch, file.delete][Self.httpMethods.firstIndex(of: only.name)!]!
                method = only.name.uppercased()
                url = checker.template(value, key: "\(key).\(only.name)")
                if let url { checker.stepURL(url, mark: value.mark, key: "\(key).\(only.name)", baseURL: baseURL) }
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
        if let url, let urlMark = (file.request?.value.url ?? [file.get, file.post, file.put, file.patch, file.delete].compactMap { $0 }.first)?.mark {
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

    private mutating func buildExtractions(_ map: OrderedMap<StepFile.ExtractionFile>?, key: String) -> [NamedExtraction] {
        var result: [NamedExtraction] = []
        for entry in map?.entries ?? [] {
            let variableKey = "\(key).extract.\(entry.key)"
            guard Template.isValidVariableName(entry.key), !entry.key.contains(".") else {
                checker.error(entry.keyMark, "\(key).extract: '\(entry.key)' is not a variable name (a word: letters, digits, '_', '-')")
                continue
            }
            if ["credentials", "site", "env"].contains(entry.key) {
                checker.error(entry.keyMark, "\(key).extract: '\(entry.key)' is reserved")
                continue
            }
            let value = entry.value
            var kinds: [(Extraction, SourceMark)] = []
            if let regex = value.regex {
                checker.regex(regex, key: "\(variableKey).regex")
                kinds.append((.regex(regex.value), regex.mark))
            }
            if let xpath = value.xpath {
                checker.xpath(xpath, key: "\(variableKey).xpath")
                kinds.append((.xpath(xpath.value), xpath.mark))
            }
            if let pointer = value.json {
                checker.jsonPointer(pointer, key: "\(variableKey).json")
                kinds.append((.json(pointer: pointer.value), pointer.mark))
            }
            if let header = value.header {
                if !Checker.isToken(header.value) {
                    checker.error(header.mark, "\(variableKey).header: '\(header.value)' is not a header name")
                }
                kinds.append((.header(header.value), header.mark))
            }
            if let cookie = value.cookie {
                if cookie.value.isEmpty { checker.error(cookie.mark, "\(variableKey).cookie: empty cookie name") }
                kinds.append((.cookie(cookie.value), cookie.mark))
            }
            if let status = value.status {
                if !status.node.isNull, status.node.scalarText != "true" {
                    checker.error(status.node.mark, "\(variableKey).status takes no value (write status: true)")
                }
                kinds.append((.status, status.node.mark))
            }
            if let url = value.url {
                var query: String?
                if url.node.pairs != nil {
                    let decoded = url.node["query"]
                    for pair in url.node.pairs ?? [] where pair.name != "query" {
                        var message = "unknown key '\(pair.name)'"
                        if let suggestion = Spelling.closest(to: pair.name, among: ["query"]) {
                            message += "; did you mean '\(suggestion)'?"
                        }
                        checker.error(pair.key.mark, message)
                    }
                    if let decoded, let name = decoded.scalarText, !decoded.isNull {
                        query = name
                    } else {
                        checker.error(url.node.mark, "\(variableKey).url: give query: NAME, or write url: true")
                    }
                } else if !url.node.isNull, url.node.scalarText != "true" {
                    checker.error(url.node.mark, "\(variableKey).url: write url: true, or url: {query: NAME}")
                }
                kinds.append((.url(query: query), url.node.mark))
            }
            if kinds.count != 1 {
                checker.error(
                    kinds.count > 1 ? kinds[1].1 : entry.keyMark,
                    kinds.isEmpty
                        ? "\(variableKey): give one of regex, xpath, json, header, cookie, status, url"
                        : "\(variableKey): give only one of regex, xpath, json, header, cookie, status, url")
                continue
            }
            result.append(NamedExtraction(name: entry.key, extraction: kinds[0].0, mark: entry.keyMark))
        }
        return result
    }

    private mutating func buildExpectations(_ marked: Marked<StepFile.ExpectFile>, key: String) -> [Expectation] {
        let expect = marked.value
        var result: [Expectation] = []
        if let statuses = expect.status {
            var codes: [Int] = []
            for status in statuses.items {
                if (100...599).contains(status.value) {
                    codes.append(status.value)
                } else {
                    checker.error(status.mark, "\(key).expect.status: \(status.value) is not an HTTP status (100-599)")
                }
            }
            if statuses.items.isEmpty {
                checker.error(marked.mark, "\(key).expect.status: give at least one status")
            }
            result.append(Expectation(.status(codes), mark: statuses.items.first?.mark ?? marked.mark))
        }
        if let pattern = expect.urlMatches {
            checker.regex(pattern, key: "\(key).expect.url_matches")
            result.append(Expectation(.urlMatches(pattern.value), mark: pattern.mark))
        }
        for text in expect.bodyContains?.items ?? [] {
            result.append(Expectation(.bodyContains(text.value), mark: text.mark))
        }
        for text in expect.notBodyContains?.items ?? [] {
            result.append(Expectation(.notBodyContains(text.value), mark: text.mark))
        }
        for cookie in expect.cookie?.items ?? [] {
            if cookie.value.isEmpty { checker.error(cookie.mark, "\(key).expect.cookie: empty cookie name") }
            result.append(Expectation(.cookie(cookie.value), mark: cookie.mark))
        }
        for header in expect.header?.items ?? [] {
            let node = header.node
            if let name = node.scalarText, !node.isNull {
                if !Checker.isToken(name) { checker.error(node.mark, "\(key).expect.header: '\(name)' is not a header name") }
                result.append(Expectation(.header(name: name, matches: nil), mark: node.mark))
            } else if let pairs = node.pairs {
                let name = node["name"]?.scalarText
                let matches = node["matches"]?.scalarText
                for pair in pairs where !["name", "matches"].contains(pair.name) {
                    var message = "unknown key '\(pair.name)'"
                    if let suggestion = Spelling.closest(to: pair.name, among: ["name", "matches"]) {
                        message += "; did you mean '\(suggestion)'?"
                    }
                    checker.error(pair.key.mark, message)
                }
                guard let name, Checker.isToken(name) else {
                    checker.error(node.mark, "\(key).expect.header needs 'name' (a header name)")
                    continue
                }
                if let matches, let matchesNode = node["matches"] {
                    checker.regex(Marked(value: matches, mark: matchesNode.mark), key: "\(key).expect.header.matches")
                }
                result.append(Expectation(.header(name: name, matches: matches), mark: node.mark))
            } else {
                checker.error(node.mark, "\(key).expect.header: give a header name or {name: ..., matches: ...}")
            }
        }
        for json in expect.json?.items ?? [] {
            guard let path = json.value.path else {
                checker.error(json.mark, "\(key).expect.json needs 'path' (an RFC 6901 pointer such as /user/name)")
                continue
            }
            checker.jsonPointer(path, key: "\(key).expect.json.path")
            let equals = json.value.equals.map { Checker.jsonValue($0.node) }
            result.append(Expectation(.json(pointer: path.value, equals: equals), mark: json.mark))
        }
        return result
    }

    // MARK: plugins

    private mutating func buildPlugin(_ file: StepFile, key: String, scope: VariableScope) -> PluginStep? {
        guard let plugin = file.plugin else { return nil }
        let before = checker.diagnostics.count
        let executable: String
        if plugin.value.isEmpty {
            checker.error(plugin.mark, "\(key).plugin: empty plugin name")
            return nil
        } else if plugin.value.contains("/") {
            executable = checker.path(plugin.value)
        } else {
            executable = (pluginsDirectory as NSString).appendingPathComponent(plugin.value)
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: executable, isDirectory: &isDirectory) {
            checker.error(plugin.mark, "\(key): plugin '\(plugin.value)' not found (looked for \(executable))")
        } else if isDirectory.boolValue || !FileManager.default.isExecutableFile(atPath: executable) {
            checker.error(plugin.mark, "\(key): plugin '\(plugin.value)' is not an executable file (chmod +x \(executable))")
        }

        var step = PluginStep(plugin: plugin.value, executablePath: executable)
        if let with = file.with, !with.node.isNull {
            if with.node.pairs == nil {
                checker.error(with.node.mark, "\(key).with: expected a mapping of names to values, found \(with.node.kindDescription)")
            } else {
                step.with = checker.jsonTemplate(with.node, key: "\(key).with")
                for variable in step.with.variables { checkVariable(variable, at: with.node.mark, key: key, scope: scope) }
            }
        }
        if let env = file.env, !env.node.isNull {
            step.environment = buildPluginEnvironment(env.node, key: "\(key).env", scope: scope)
        }
        if let timeout = checker.positiveDuration(file.timeout, key: "\(key).timeout") { step.timeout = timeout }
        step.passCredentials = file.passCredentials?.value ?? false
        return checker.diagnostics.count == before ? step : nil
    }

    private mutating func buildPluginEnvironment(_ node: YAMLNode, key: String, scope: VariableScope) -> [PluginStep.EnvironmentEntry] {
        var entries: [PluginStep.EnvironmentEntry] = []
        if let items = node.items {
            for item in items {
                guard let name = item.scalarText, Checker.isEnvironmentName(name) else {
                    checker.error(item.mark, "\(key): \(item.kindDescription) is not an environment variable name")
                    continue
                }
                entries.append(.inherit(name))
            }
        } else if let pairs = node.pairs {
            for pair in pairs {
                guard Checker.isEnvironmentName(pair.name) else {
                    checker.error(pair.key.mark, "\(key): '\(pair.name)' is not an environment variable name")
                    continue
                }
                guard let text = pair.value.scalarText, !pair.value.isNull else {
                    checker.error(pair.value.mark, "\(key).\(pair.name): expected a text, found \(pair.value.kindDescription)")
                    continue
                }
                guard let template = checker.template(Marked(value: text, mark: pair.value.mark), key: "\(key).\(pair.name)")
                else { continue }
                for variable in template.variables { checkVariable(variable, at: pair.value.mark, key: key, scope: scope) }
                entries.append(.set(name: pair.name, value: template))
            }
        } else {
            checker.error(node.mark, "\(key): expected a list of names or a mapping of names to values")
        }
        return entries
    }

    // MARK: variables

    private mutating func checkVariable(_ variable: String, at mark: SourceMark, key: String, scope: VariableScope) {
        if let problem = scope.problem(with: variable) {
            checker.error(mark, "\(key): \(problem)")
        }
    }

    // MARK: refresh, cookies, outputs

    private mutating func buildRefresh(_ file: SiteFile.RefreshFile?, defaults: RefreshPolicy) -> RefreshPolicy {
        RefreshBuilder.build(file, over: defaults, checker: &checker)
    }

    private mutating func buildCookies(_ file: SiteFile.CookiesFile?) -> CookiePolicy {
        var policy = CookiePolicy()
        guard let file else { return policy }
        for name in file.essential?.items ?? [] {
            if name.value.isEmpty || name.value.contains(where: { $0 == ";" || $0 == "=" || $0.isWhitespace }) {
                checker.error(name.mark, "cookies.essential: '\(name.value)' is not a cookie name")
            } else {
                policy.essential.append(name.value)
            }
        }
        if let accept = checker.choice(file.accept, CookiePolicy.Accept.self, key: "cookies.accept") { policy.accept = accept }
        if let persist = file.persistSessionCookies { policy.persistSessionCookies = persist.value }
        if let limits = file.limits {
            func positive(_ value: Marked<Int>?, _ name: String) -> Int? {
                guard let value else { return nil }
                guard value.value > 0 else {
                    checker.error(value.mark, "cookies.limits.\(name) must be at least 1")
                    return nil
                }
                return value.value
            }
            policy.limits = CookiePolicy.Limits(
                maxCookieBytes: positive(limits.maxCookieBytes, "max_cookie_bytes"),
                maxCookiesPerDomain: positive(limits.maxCookiesPerDomain, "max_cookies_per_domain"),
                maxCookies: positive(limits.maxCookies, "max_cookies"))
        }
        return policy
    }

    private mutating func buildOutput(_ marked: Marked<SiteFile.OutputFile>) -> OutputFile? {
        let file = marked.value
        guard let pathValue = file.path else {
            checker.error(marked.mark, "outputs: an output needs 'path'")
            return nil
        }
        guard let format = file.format else {
            checker.error(marked.mark, "outputs: an output needs 'format' (header, set-cookie, netscape, json, playwright)")
            return nil
        }
        guard let path = checker.nonEmptyPath(pathValue, key: "outputs.path"),
            let kind = checker.choice(format, OutputFile.Format.self, key: "outputs.format")
        else { return nil }
        let mode = checker.mode(file.mode, key: "outputs.mode") ?? 0o600
        return OutputFile(path: path, format: kind, mode: mode, mark: marked.mark)
    }
}

/// What `{{ name }}` may refer to at one point of a flow.
struct VariableScope {
    var credentials: [String]
    var allowEnv: [String]
    var extracted: Set<String>
    /// After a plugin step that does not list `provides:`, any plain name may exist.
    var open: Bool

    static let siteVariables = ["base_url", "name"]

    func problem(with variable: String) -> String? {
        let parts = variable.split(separator: ".", maxSplits: 1).map(String.init)
        if parts.count == 2 {
            switch parts[0] {
            case "credentials":
                if credentials.contains(parts[1]) { return nil }
                var message = "'{{ \(variable) }}': no credential named '\(parts[1])'"
                if let suggestion = Spelling.closest(to: parts[1], among: credentials) {
                    message += "; did you mean 'credentials.\(suggestion)'?"
                } else {
                    message += credentials.isEmpty ? " (the site declares no credentials)" : " (declared: \(credentials.joined(separator: ", ")))"
                }
                return message
            case "site":
                if Self.siteVariables.contains(parts[1]) { return nil }
                return "'{{ \(variable) }}': unknown site variable (site.base_url and site.name exist)"
            case "env":
                if allowEnv.contains(parts[1]) { return nil }
                return "'{{ \(variable) }}': '\(parts[1])' is not listed under allow_env"
            default:
                return "'{{ \(variable) }}': unknown variable (dotted names start with credentials., site. or env.)"
            }
        }
        if extracted.contains(variable) || open { return nil }
        var message = "'{{ \(variable) }}': no earlier step extracts '\(variable)'"
        if let suggestion = Spelling.closest(to: variable, among: Array(extracted).sorted())
            ?? extracted.sorted().first(where: { variable.hasPrefix($0) || $0.hasPrefix(variable) })
        {
            message += "; did you mean '\(suggestion)'?"
        } else if let suggestion = Spelling.closest(to: variable, among: credentials) {
            message += "; did you mean 'credentials.\(suggestion)'?"
        }
        return message
    }
}

extension StepFile {
    init(plugin: Marked<String>, with: RawNode?, env: RawNode?, timeout: Marked<String>?, passCredentials: Marked<Bool>?) {
        self.plugin = plugin
        self.with = with
        self.env = env
        self.timeout = timeout
        self.passCredentials = passCredentials
    }
}

extension Marked {
    init(value: Value, mark: SourceMark) {
        self.value = value
        self.mark = mark
        keyMark = mark
    }
}
