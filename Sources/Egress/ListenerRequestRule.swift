import Foundation
import SiteConfig

/// The loopback listener serves programs, not web pages (SPEC section 10): which requests it refuses, from
/// their `Host`, `Origin` and `Sec-Fetch-Site` fields alone.
///
/// The listener attaches the session itself, so a browser's own defences do not apply to it: a page whose
/// name rebinds to 127.0.0.1 (DNS rebinding) reads answers from the listener as its own origin, and a cross-site
/// form post arrives with the session the daemon adds (SameSite is about the browser's cookies, and the browser
/// sends none). Both are told by fields a browser sets and a page cannot: the rebinding page's requests carry
/// its own name in `Host`; a cross-site request carries an `Origin` (every POST, and every CORS request) or a
/// `Sec-Fetch-Site` other than `none`/`same-origin` (every request of a current browser). A program (curl, a
/// script's HTTP library) sends the address it connected to as `Host` and neither of the other two.
public struct ListenerRequestRule: Sendable, Hashable {
    /// The `Host` values a request may carry, lowercased: the listen address as written and `localhost` with
    /// its port (and both without the port when it is HTTP's default, 80, as RFC 9110 section 7.2 lets a client
    /// leave it out).
    public let hosts: Set<String>
    /// The origins a request may carry: `http://` and each of ``hosts``, the listener's own pages' origins.
    public let origins: Set<String>

    public init(listen: LoopbackListenAddress) {
        let host = listen.isIPv6 ? "[\(listen.host.lowercased())]" : listen.host.lowercased()
        var hosts: Set<String> = ["\(host):\(listen.port)", "localhost:\(listen.port)"]
        if listen.port == 80 { hosts.formUnion([host, "localhost"]) }
        self.hosts = hosts
        origins = Set(hosts.map { "http://" + $0 })
    }

    /// Why a request is refused, in one line; nil when it may be served.
    ///
    /// - Parameters:
    ///   - hostFields: every `Host` field of the request, in order (RFC 9112 section 3.2: exactly one).
    ///   - originFields: every `Origin` field.
    ///   - fetchSiteFields: every `Sec-Fetch-Site` field.
    public func refusal(hostFields: [String], originFields: [String], fetchSiteFields: [String]) -> String? {
        guard hostFields.count == 1, let host = hostFields.first?.trimmed.lowercased() else {
            return hostFields.isEmpty ? "the request has no Host field" : "the request has \(hostFields.count) Host fields"
        }
        guard hosts.contains(host) else {
            return "Host \(Self.quoted(host)) is not this listener's address (\(hosts.sorted().joined(separator: ", ")))"
        }
        for origin in originFields where !origins.contains(origin.trimmed.lowercased()) {
            return "a request from a web page (Origin \(Self.quoted(origin))) is not served: the listener is for programs"
        }
        for site in fetchSiteFields {
            let value = site.trimmed.lowercased()
            if value != "none" && value != "same-origin" {
                return "a request from a web page (Sec-Fetch-Site \(Self.quoted(value))) is not served: the listener is for programs"
            }
        }
        return nil
    }

    /// A field's value for a log line or an error, cut short: it is the client's text, not the daemon's.
    private static func quoted(_ value: String) -> String {
        let printable = String(value.unicodeScalars.prefix(100).map { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" ? Character($0) : "?" })
        return "\"" + printable + (value.unicodeScalars.count > 100 ? "..." : "") + "\""
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespaces) }
}
