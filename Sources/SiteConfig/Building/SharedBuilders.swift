import Foundation

/// `http:` of a site or of `defaults:`, on its own (the site builder merges it over the defaults).
enum HTTPBuilder {
    static let proxySchemes = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]
    /// Enough for any real login chain; curl's default is 50 but loops show up long before.
    static let maximumRedirects = 50

    static func build(_ file: SiteFile.HTTPFile, checker: inout Checker) -> HTTPSettings {
        var settings = HTTPSettings()
        settings.timeout = checker.positiveDuration(file.timeout, key: "http.timeout")
        settings.connectTimeout = checker.positiveDuration(file.connectTimeout, key: "http.connect_timeout")
        if let userAgent = file.userAgent {
            if userAgent.value.allSatisfy(\.isWhitespace) {
                // SPEC section 3: a User-Agent is "never none"; leaving the key out gives the default.
                checker.error(
                    userAgent.mark,
                    "http.user_agent is empty; every request carries a User-Agent (leave the key out for \(SessionKeeperVersion.userAgent))")
            } else if userAgent.value.contains(where: { $0 == "\n" || $0 == "\r" }) {
                checker.error(userAgent.mark, "http.user_agent: must be one line")
            } else {
                settings.userAgent = userAgent.value
            }
        }
        for entry in file.headers?.entries ?? [] {
            if !Checker.isToken(entry.key) {
                checker.error(entry.keyMark, "http.headers: '\(entry.key)' is not a valid header name")
            } else if entry.value.value.contains(where: { $0 == "\n" || $0 == "\r" }) {
                checker.error(entry.value.mark, "http.headers.\(entry.key): must be one line")
            } else {
                settings.headers.append(HTTPSettings.Header(name: entry.key, value: entry.value.value))
            }
        }
        if let proxy = file.proxy {
            if let url = URL(string: proxy.value), let scheme = url.scheme?.lowercased(), proxySchemes.contains(scheme),
                url.host?.isEmpty == false
            {
                settings.proxy = proxy.value
            } else {
                checker.error(
                    proxy.mark, "http.proxy: '\(proxy.value)' is not a proxy URL (\(proxySchemes.map { $0 + "://" }.joined(separator: ", "))HOST:PORT)")
            }
        }
        for entry in file.resolve?.items ?? [] {
            // curl --resolve: HOST:PORT:ADDRESS[,ADDRESS...]; IPv6 addresses may be bracketed.
            let parts = entry.value.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port), !parts[2].isEmpty {
                settings.resolve.append(entry.value)
            } else {
                checker.error(entry.mark, "http.resolve: '\(entry.value)' is not HOST:PORT:ADDRESS (as curl --resolve takes)")
            }
        }
        if let caFile = checker.nonEmptyPath(file.caFile, key: "http.ca_file") {
            if FileManager.default.isReadableFile(atPath: caFile) {
                settings.caFile = caFile
            } else if let mark = file.caFile?.mark {
                checker.error(mark, "http.ca_file: cannot read \(caFile)")
            }
        }
        if let clientCert = file.clientCert {
            let cert = checker.nonEmptyPath(clientCert.value.cert, key: "http.client_cert.cert")
            let key = checker.nonEmptyPath(clientCert.value.key, key: "http.client_cert.key")
            if clientCert.value.cert == nil || clientCert.value.key == nil {
                checker.error(clientCert.mark, "http.client_cert needs both 'cert' and 'key' (PEM files)")
            } else if let cert, let key {
                for (path, mark) in [(cert, clientCert.value.cert!.mark), (key, clientCert.value.key!.mark)]
                where !FileManager.default.isReadableFile(atPath: path) {
                    checker.error(mark, "http.client_cert: cannot read \(path)")
                }
                settings.clientCertificate = HTTPSettings.ClientCertificate(certificatePath: cert, keyPath: key)
            }
        }
        settings.insecure = file.insecure?.value ?? false
        settings.httpVersion = checker.choice(file.httpVersion, HTTPSettings.HTTPVersion.self, key: "http.http_version")
        if let maxRedirects = file.maxRedirects {
            if (0...maximumRedirects).contains(maxRedirects.value) {
                settings.maxRedirects = maxRedirects.value
            } else {
                checker.error(maxRedirects.mark, "http.max_redirects: \(maxRedirects.value) is outside 0...\(maximumRedirects)")
            }
        }
        return settings
    }
}

/// `refresh:` over a base policy (the built-in defaults or the config's `defaults.refresh`).
enum RefreshBuilder {
    static func build(_ file: SiteFile.RefreshFile?, over base: RefreshPolicy, checker: inout Checker) -> RefreshPolicy {
        var policy = base
        guard let file else { return policy }
        if let beforeExpiry = checker.duration(file.beforeExpiry, key: "refresh.before_expiry") {
            policy.beforeExpiry = beforeExpiry
        }
        if let maxAge = checker.positiveDuration(file.maxAge, key: "refresh.max_age") { policy.maxAge = maxAge }
        if let minInterval = checker.positiveDuration(file.minInterval, key: "refresh.min_interval") { policy.minInterval = minInterval }
        if let retry = file.retry {
            if let initial = checker.positiveDuration(retry.initial, key: "refresh.retry.initial") { policy.retry.initial = initial }
            if let max = checker.positiveDuration(retry.max, key: "refresh.retry.max") { policy.retry.max = max }
            if let failures = retry.maxFailuresPerDay {
                let allowed = 1...RefreshPolicy.Retry.maximumMaxFailuresPerDay
                if allowed.contains(failures.value) {
                    policy.retry.maxFailuresPerDay = failures.value
                } else {
                    checker.error(failures.mark, "refresh.retry.max_failures_per_day: \(failures.value) is outside 1...\(allowed.upperBound)")
                }
            }
            if policy.retry.max < policy.retry.initial, let mark = retry.max?.mark ?? retry.initial?.mark {
                checker.error(mark, "refresh.retry.max (\(DurationText.format(policy.retry.max))) is shorter than initial (\(DurationText.format(policy.retry.initial)))")
            }
        }
        if let maxAge = policy.maxAge, maxAge <= policy.beforeExpiry, let mark = file.maxAge?.mark ?? file.beforeExpiry?.mark {
            checker.error(mark, "refresh.max_age (\(DurationText.format(maxAge))) must be longer than before_expiry (\(DurationText.format(policy.beforeExpiry)))")
        }
        return policy
    }
}
