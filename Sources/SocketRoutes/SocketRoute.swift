/// The socket's routes (SPEC section 8), defined once: each one's methods, path pattern, query parameters and
/// whether its body streams. The server's router matches requests against this table (SocketAPI), the CLI builds
/// every request's target with ``target(site:query:rest:)``, and `docs/socket-routes.json` describes it for the
/// Python client's tests (SocketRoutesTests keeps that file equal to this table).
///
/// Pure: no NIO, no Foundation, so that a client links it without the server's stack.
public enum SocketRoute: String, CaseIterable, Sendable {
    case health, sites, site, cookies, refresh, report, setCookie = "set-cookie", events, reload, metrics, answer, proxy

    /// The method a client sends: the route's only one, or for the egress route the default (a client may send
    /// any of ``methods``).
    public var method: String { methods[0] }

    /// Every method the route answers: its one method, and for the egress route each method a client may send
    /// through it.
    public var methods: [String] {
        switch self {
        case .health, .sites, .site, .cookies, .events, .metrics: ["GET"]
        case .refresh, .report, .setCookie, .reload, .answer: ["POST"]
        case .proxy: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        }
    }

    /// The path, with `{name}` for a site's name (one non-empty segment) and `**` for any rest (the site's own
    /// path, also none).
    public var pattern: String {
        switch self {
        case .health: "/v1/health"
        case .sites: "/v1/sites"
        case .site: "/v1/sites/{name}"
        case .cookies: "/v1/sites/{name}/cookies"
        case .refresh: "/v1/sites/{name}/refresh"
        case .report: "/v1/sites/{name}/report"
        case .setCookie: "/v1/sites/{name}/set-cookie"
        case .events: "/v1/events"
        case .reload: "/v1/reload"
        case .metrics: "/metrics"
        case .answer: "/v1/sites/{name}/answer"
        case .proxy: "/v1/sites/{name}/proxy/**"
        }
    }

    /// Whether the request's body streams on to a site (the egress route) rather than being read whole by the
    /// daemon. Such a body is paced by the site, with backpressure, and bounded by the transfer's own limit on
    /// silence (`http.timeout`): the socket's `request_timeout` then covers the request's head only, or an
    /// upload longer than it would be cut off.
    public var streamsRequestBody: Bool { self == .proxy }

    /// The query parameters the route takes, in the order they are checked. The egress route's query is the
    /// site's, not the route's: it takes none of its own.
    public var parameters: [QueryParameter] {
        switch self {
        case .health, .sites, .site, .events, .reload, .metrics, .proxy: []
        case .cookies: [.format, .url, .minValid, .wait]
        case .refresh: [.wait]
        case .report: [.status]
        case .setCookie: [.url]
        case .answer: [.name]
        }
    }

    /// Whether the pattern names a site (`{name}`).
    public var namesSite: Bool { pattern.utf8.contains(UInt8(ascii: "{")) }

    // MARK: Building a request's target (the clients' side)

    /// The request target of this route: the pattern with `site` (percent-encoded) for `{name}`, `rest` for a
    /// last `**` (the egress route's site path, sent as the caller wrote it), then the query of the parameters
    /// whose value is set, in the order given, each value percent-encoded.
    ///
    /// A site for a route without `{name}` (or none for one with it), a parameter the route does not take, or a
    /// rest for a route without `**`, is a fault of the calling code, not of its input: it stops the program.
    public func target(site: String? = nil, query: [(QueryParameter, String?)] = [], rest: String = "") -> String {
        precondition(namesSite == (site != nil), "\(pattern): a site is given exactly when the pattern has {name}")
        precondition(rest.isEmpty || self == .proxy, "\(pattern) takes no rest of a path")
        var path = ""
        for part in pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            switch part {
            case "{name}": path += "/" + Self.percentEncoded(site ?? "")
            case "**": path += rest
            default: path += "/" + part
            }
        }
        var pairs: [String] = []
        for (parameter, value) in query {
            precondition(parameters.contains(parameter), "\(pattern) takes no parameter '\(parameter.rawValue)'")
            if let value { pairs.append(parameter.rawValue + "=" + Self.percentEncoded(value)) }
        }
        return pairs.isEmpty ? path : path + "?" + pairs.joined(separator: "&")
    }

    /// `text` with every byte but RFC 3986's unreserved characters (ASCII letters, digits, `-._~`)
    /// percent-encoded, as `%XX` in upper case: a path segment or a query value that reads back as written.
    public static func percentEncoded(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.append(byte)
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Matching a request's path (the server's side)

    /// Each route's pattern as bytes, read once.
    private static let patterns = allCases.map { ($0, Array($0.pattern.utf8)) }
    /// Those of the routes whose body streams on to a site: every request's head is matched against them only.
    private static let streamingPatterns = patterns.filter { $0.0.streamsRequestBody }

    /// The routes whose pattern `path` (without its query) matches, whatever their method.
    public static func matching(_ path: Substring) -> [SocketRoute] {
        var path = path
        return path.withUTF8 { given in
            patterns.compactMap { route, pattern in pattern.withUnsafeBufferPointer { matches($0, given) } ? route : nil }
        }
    }

    public static func matching(_ path: String) -> [SocketRoute] {
        matching(path[...])
    }

    /// The `{name}` segment of a path its route's pattern matched (the third: `/v1/sites/{name}/...`), as
    /// written (still percent-encoded); nil for a path without one.
    public static func siteSegment(in path: Substring) -> Substring? {
        let bytes = path.utf8
        var start = bytes.startIndex
        for _ in 0..<3 {
            guard let slash = bytes[start...].firstIndex(of: UInt8(ascii: "/")) else { return nil }
            start = bytes.index(after: slash)
        }
        let end = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        // `/` is ASCII, so both ends are character boundaries.
        return path[start..<end]
    }

    /// Whether `path` (without its query) names a route whose body streams on to a site.
    public static func streamsRequestBody(path: Substring) -> Bool {
        var path = path
        return path.withUTF8 { given in streamingPatterns.contains { $0.1.withUnsafeBufferPointer { matches($0, given) } } }
    }

    /// Whether `path` matches `pattern`, both read as bytes in one pass: a literal byte matches itself, `{...}` one
    /// non-empty segment (up to the next `/`), and a last `/**` any rest, also none (`/proxy` as `/proxy/`). This
    /// runs for every request's head against every route: no array, no `Character`, no reference counting.
    private static func matches(_ pattern: UnsafeBufferPointer<UInt8>, _ path: UnsafeBufferPointer<UInt8>) -> Bool {
        let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*"), open = UInt8(ascii: "{"), close = UInt8(ascii: "}")
        var p = 0
        var q = 0
        while p < pattern.count {
            let byte = pattern[p]
            if byte == slash, p + 1 < pattern.count, pattern[p + 1] == star {
                return q == path.count || path[q] == slash
            }
            if byte == open {
                let segmentStart = q
                while q < path.count, path[q] != slash { q += 1 }
                guard q > segmentStart else { return false }
                while p < pattern.count, pattern[p] != close { p += 1 }
                p += 1
                continue
            }
            guard q < path.count, path[q] == byte else { return false }
            p += 1
            q += 1
        }
        return q == path.count
    }
}

/// A query parameter one of the routes takes.
public enum QueryParameter: String, CaseIterable, Sendable {
    /// `cookies`: the output format (SPEC section 8).
    case format
    /// `cookies`, `set-cookie`: an absolute http or https URL with a host.
    case url
    /// `cookies`: a duration the session must stay valid for.
    case minValid = "min_valid"
    /// `cookies`, `refresh`: how long to wait for a login.
    case wait
    /// `report`: the HTTP status the client saw.
    case status
    /// `answer`: the prompt answered (any, when absent).
    case name
}
