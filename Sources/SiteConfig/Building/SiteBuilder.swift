import Foundation
import Platform

/// Turns a decoded ``SiteFile`` into a ``SiteDefinition``: applies defaults and the config's
/// `defaults:`, resolves paths and plugins, and checks everything SPEC section 3 requires.
struct SiteBuilder {
    /// `[a-z0-9][a-z0-9._-]{0,62}` (SPEC section 1).
    static let maximumNameLength = 63
    /// Redirects that a step following redirects never ends on (RFC 9110 section 15.4).
    static let followedRedirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    let file: String
    let rootMark: SourceMark
    let defaults: SiteDefaults
    let pluginsDirectory: String
    /// `state_dir`: no `outputs:` file may be written inside it (it holds the vault and its keyring).
    let stateDirectory: String
    /// The variable holding the vault's passphrase (`vault.key: {passphrase_env: NAME}`), which no site may read.
    let passphraseVariable: String?
    var checker: Checker

    init(
        file: String, rootMark: SourceMark, defaults: SiteDefaults, pluginsDirectory: String, stateDirectory: String,
        passphraseVariable: String?, environment: [String: String]
    ) {
        self.file = file
        self.rootMark = rootMark
        self.defaults = defaults
        self.pluginsDirectory = pluginsDirectory
        self.stateDirectory = stateDirectory
        self.passphraseVariable = passphraseVariable
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

        var doneWhen: [Expectation] = []
        let login = buildLogin(site.login, scope: &scope, baseURL: baseURL, doneWhen: &doneWhen)
        let probeScope = VariableScope(credentials: credentials.map(\.name), allowEnv: allowEnv, extracted: [], open: false)
        let check = site.check.flatMap { buildProbe($0, key: "check", scope: probeScope, baseURL: baseURL) }
        let keepalive = site.keepalive.flatMap { buildProbe($0, key: "keepalive", scope: probeScope, baseURL: baseURL) }
        let refresh = buildRefresh(site.refresh, defaults: defaults.refresh)
        warnAboutPromptTimeouts(login, refresh: refresh)
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
        var egress = buildEgress(site.egress)
        // SPEC section 10: without `egress.logged_out`, the login flow and the check say what a dead session looks like.
        if site.egress?.loggedOut == nil, let login, let baseURL {
            egress.loggedOut = LoggedOutRule.derived(login: login, check: check, baseURL: baseURL)
        }
        if let description = site.description, description.value.contains("\n") {
            checker.error(description.mark, "description: keep it to one line")
        }

        guard checker.diagnostics.isEmpty, let name, let baseURL, let login else { return nil }
        var definition = SiteDefinition(
            name: name, file: file, description: site.description?.value, baseURL: baseURL, http: http,
            credentials: credentials, login: login, doneWhen: doneWhen, check: check, keepalive: keepalive, refresh: refresh,
            cookies: cookies, outputs: outputs, access: access, enabled: site.enabled?.value ?? true,
            allowEnv: allowEnv, egress: egress, learn: site.learn?.value ?? true)
        definition.warnings = checker.warnings
        return definition
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
    /// by case-insensitive name. A User-Agent set nowhere is ``SessionKeeperVersion/userAgent``.
    private mutating func buildHTTP(_ http: SiteFile.HTTPFile?) -> HTTPSettings {
        var settings = merge(http, over: defaults.http)
        if settings.userAgent == nil { settings.userAgent = SessionKeeperVersion.userAgent }
        return settings
    }

    private mutating func merge(_ http: SiteFile.HTTPFile?, over defaults: HTTPSettings) -> HTTPSettings {
        var settings = defaults
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

    // MARK: refresh, cookies, outputs

    private mutating func buildRefresh(_ file: SiteFile.RefreshFile?, defaults: RefreshPolicy) -> RefreshPolicy {
        RefreshBuilder.build(file, over: defaults, checker: &checker)
    }

    private mutating func buildCookies(_ file: SiteFile.CookiesFile?) -> CookiePolicy {
        var policy = CookiePolicy()
        guard let file else { return policy }
        for entry in file.essential?.items ?? [] {
            guard let selector = cookieEntry(entry, key: "cookies.essential") else { continue }
            if policy.essential.contains(selector) {
                checker.error(entry.mark, "cookies.essential: '\(selector)' is listed twice")
            } else {
                policy.essential.append(selector)
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
        if let keep = file.keepOnLogin, let built = buildKeepOnLogin(keep) { policy.keepOnLogin = built }
        return policy
    }

    /// The spellings of `keep_on_login`'s words.
    private enum KeepOnLoginWord: String, CaseIterable {
        case allButEssential = "all-but-essential"
        case none
    }

    private mutating func buildKeepOnLogin(_ marked: Marked<SiteFile.KeepOnLoginFile>) -> KeepOnLogin? {
        let key = "cookies.keep_on_login"
        switch marked.value {
        case .word(let word):
            guard let word = checker.choice(word, KeepOnLoginWord.self, key: key) else { return nil }
            switch word {
            case .allButEssential: return .allButEssential
            // Spelled out: a bare `.none` in an optional return would be Optional.none.
            case .none: return KeepOnLogin.none
            }
        case .names(let names):
            guard !names.isEmpty else {
                checker.error(marked.mark, "\(key): the list is empty; write none to start every login from an empty jar")
                return nil
            }
            var kept: [CookieSelector] = []
            let before = checker.diagnostics.count
            for name in names {
                guard let valid = cookieEntry(name, key: key) else { continue }
                if kept.contains(valid) {
                    checker.error(name.mark, "\(key): '\(valid)' is listed twice")
                } else {
                    kept.append(valid)
                }
            }
            return checker.diagnostics.count == before ? .names(kept) : nil
        }
    }

    /// An entry of `essential` or `keep_on_login`: a name (or `PREFIX*`), or `{name, domain, path}`.
    private mutating func cookieEntry(_ entry: Marked<SiteFile.CookieEntryFile>, key: String) -> CookieSelector? {
        switch entry.value {
        case .name(let name):
            return cookieName(Marked(value: name, mark: entry.mark), key: key).map { CookieSelector($0) }
        case .scoped(let scoped):
            guard let name = scoped.name else {
                checker.error(entry.mark, "\(key): missing key 'name' in {name: NAME, domain: HOST}")
                return nil
            }
            let before = checker.diagnostics.count
            let valid = cookieName(name, key: "\(key).name")
            var domain: String?
            if let given = scoped.domain {
                let host = given.value.hasPrefix(".") ? String(given.value.dropFirst()) : given.value
                if host.isEmpty || host.contains(where: { "/:@?#;=".contains($0) || $0.isWhitespace }) {
                    checker.error(
                        given.mark,
                        "\(key).domain: '\(given.value)' is not a host name; write the host alone, such as idp.example.com")
                } else {
                    domain = host
                }
            }
            var path: String?
            if let given = scoped.path {
                if given.value.hasPrefix("/") {
                    path = given.value
                } else {
                    checker.error(given.mark, "\(key).path: '\(given.value)' is not a cookie path; it starts with '/'")
                }
            }
            guard checker.diagnostics.count == before, let valid else { return nil }
            return CookieSelector(valid, domain: domain, path: path)
        }
    }

    /// A cookie name as `cookies:` lists it: not empty, and without the characters that end a name in a
    /// Cookie header (';', '=', white space). A '/' is refused too: no cookie the flow stores can have it, and
    /// it is how `HOST/NAME` is mistaken for a name of another host's cookie.
    private mutating func cookieName(_ name: Marked<String>, key: String) -> String? {
        if let slash = name.value.lastIndex(of: "/"), !name.value.contains(where: { $0 == ";" || $0 == "=" || $0.isWhitespace }) {
            let host = name.value[..<slash]
            let bare = name.value[name.value.index(after: slash)...]
            let hint = host.isEmpty || bare.isEmpty
                ? "a cookie name has no '/'"
                : "to name a cookie of another host write {name: \(bare), domain: \(host)}"
            checker.error(name.mark, "\(key): '\(name.value)' can match no cookie: \(hint)")
            return nil
        }
        guard !name.value.isEmpty, !name.value.contains(where: { $0 == ";" || $0 == "=" || $0.isWhitespace }) else {
            checker.error(name.mark, "\(key): '\(name.value)' is not a cookie name")
            return nil
        }
        return name.value
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
        if let inside = Self.insideStateDirectory(path, stateDirectory: stateDirectory) {
            checker.error(
                pathValue.mark,
                "outputs.path: \(path) is inside state_dir (\(inside)), which holds the vault and its keyring; a site may not "
                    + "write there: choose a path outside it")
            return nil
        }
        let mode = checker.mode(file.mode, key: "outputs.mode") ?? 0o600
        if mode & 0o044 != 0 {
            let who = mode & 0o040 != 0 ? (mode & 0o004 != 0 ? "its group and others" : "its group") : "others"
            checker.warning(
                (file.mode?.mark ?? marked.mark),
                "outputs.mode: \"0\(String(mode, radix: 8))\" lets \(who) read the session's cookies in \(path); \"0600\" keeps them to "
                    + "the daemon's user")
        }
        return OutputFile(path: path, format: kind, mode: mode, mark: marked.mark)
    }

    /// `state_dir` (as written, or with its symbolic links resolved) when `path` (or the file it resolves to)
    /// is inside it, else nil. Symbolic links are resolved as far as the path exists.
    static func insideStateDirectory(_ path: String, stateDirectory: String) -> String? {
        let states = Set([stateDirectory, Syscall.resolvingLinks(stateDirectory)])
        let paths = [path, Syscall.resolvingLinks(path)]
        for state in states {
            for candidate in paths where candidate == state || candidate.hasPrefix(state == "/" ? "/" : state + "/") {
                return state
            }
        }
        return nil
    }
}
