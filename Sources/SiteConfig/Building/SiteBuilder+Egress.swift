import Foundation

/// `egress:` (SPEC section 10).
extension SiteBuilder {
    mutating func buildEgress(_ file: SiteFile.EgressFile?) -> EgressPolicy {
        var policy = EgressPolicy()
        guard let file else { return policy }
        if let loggedOut = file.loggedOut { policy.loggedOut = buildLoggedOut(loggedOut.value) }
        if let retry = checker.choice(file.retry, EgressPolicy.Retry.self, key: "egress.retry") { policy.retry = retry }
        if let listen = file.listen { policy.listen = buildListen(listen) }
        return policy
    }

    private mutating func buildLoggedOut(_ file: SiteFile.LoggedOutFile) -> LoggedOutRule {
        var rule = LoggedOutRule()
        if let statuses = file.status {
            rule.statuses = []
            for status in statuses.items {
                if (100...599).contains(status.value) {
                    if !rule.statuses.contains(status.value) { rule.statuses.append(status.value) }
                } else {
                    checker.error(status.mark, "egress.logged_out.status: \(status.value) is not an HTTP status (100-599)")
                }
            }
        }
        if let pattern = file.urlMatches {
            checker.regex(pattern, key: "egress.logged_out.url_matches")
            rule.urlPattern = pattern.value
        }
        if let text = file.bodyContains {
            if text.value.isEmpty {
                checker.error(text.mark, "egress.logged_out.body_contains is empty; it would match every answer")
            } else if text.value.utf8.count > LoggedOutRule.bodyPrefixLimit {
                checker.error(
                    text.mark,
                    "egress.logged_out.body_contains is longer than the \(LoggedOutRule.bodyPrefixLimit / 1024) KiB of a body the daemon looks at")
            } else {
                rule.bodyText = text.value
            }
        }
        return rule
    }

    /// `127.0.0.1:PORT` (any address of 127.0.0.0/8) or `[::1]:PORT`.
    private mutating func buildListen(_ value: Marked<String>) -> LoopbackListenAddress? {
        let text = value.value.trimmingCharacters(in: .whitespaces)
        let key = "egress.listen"
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                checker.error(value.mark, "\(key): '\(text)' is not [ADDRESS]:PORT; write [::1]:8481")
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                checker.error(value.mark, "\(key): '\(text)' has no port; write ADDRESS:PORT, such as 127.0.0.1:8481")
                return nil
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            if host.contains(":") {
                checker.error(value.mark, "\(key): write an IPv6 address in brackets, as in [::1]:8481")
                return nil
            }
        }
        guard let number = UInt16(port), number > 0, port.allSatisfy(\.isASCII) else {
            checker.error(value.mark, "\(key): '\(port)' is not a port (1...65535)")
            return nil
        }
        guard let address = Self.loopbackAddress(String(host)) else {
            let reason: String
            if Self.isIPAddress(String(host)) {
                reason = "\(host) is not a loopback address"
            } else {
                reason = "'\(host)' is not an IP address (names are not resolved)"
            }
            checker.error(
                value.mark,
                "\(key): \(reason); the listener takes only 127.0.0.0/8 or [::1], so that every client is a local process whose user the kernel names")
            return nil
        }
        return LoopbackListenAddress(host: address, port: number, mark: value.mark)
    }

    /// The address in its usual spelling when it is a loopback address: an IPv4 address in 127.0.0.0/8
    /// (dotted quad), or any spelling of IPv6 `::1` (given as `::1`); nil otherwise.
    static func loopbackAddress(_ text: String) -> String? {
        var ipv4 = in_addr()
        if inet_pton(AF_INET, text, &ipv4) == 1 {
            // s_addr is in network byte order: its first byte is the first number written.
            return withUnsafeBytes(of: &ipv4.s_addr) { $0[0] } == 127 ? text : nil
        }
        var ipv6 = in6_addr()
        if inet_pton(AF_INET6, text, &ipv6) == 1 {
            let bytes = withUnsafeBytes(of: &ipv6) { Array($0) }
            return bytes == Array(repeating: 0, count: 15) + [1] ? "::1" : nil
        }
        return nil
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        return inet_pton(AF_INET, text, &ipv4) == 1 || inet_pton(AF_INET6, text, &ipv6) == 1
    }
}
