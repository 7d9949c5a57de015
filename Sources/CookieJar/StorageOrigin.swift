import Foundation
import JSON

/// One origin's localStorage, as Playwright's storageState keeps it beside the cookies
/// (`{"origin": "https://app.example.com", "localStorage": [{"name": ..., "value": ...}]}`): single-page
/// apps keep their login there, so a session made by a browser is the cookies plus these.
///
/// Values are secrets as much as cookie values are: never logged, never in an error.
public struct StorageOrigin: Sendable, Hashable, Codable {
    /// One localStorage entry.
    public struct Item: Sendable, Hashable, Codable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// `scheme://host[:port]`, as `window.origin` spells it.
    public var origin: String
    public var localStorage: [Item]

    public init(origin: String, localStorage: [Item]) {
        self.origin = origin
        self.localStorage = localStorage
    }

    /// Whether this is the origin of `url` (scheme, host and port, default ports left out as browsers do).
    public func isOrigin(of url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return false }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        let port = url.port.flatMap { $0 == defaultPort ? nil : $0 }.map { ":\($0)" } ?? ""
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return origin.lowercased() == "\(scheme)://\(bracketed)\(port)"
    }

    /// The storageState object for this origin.
    var jsonValue: JSONValue {
        .object([
            ("origin", .string(origin)),
            ("localStorage", .array(localStorage.map { .object([("name", .string($0.name)), ("value", .string($0.value))]) })),
        ])
    }
}
