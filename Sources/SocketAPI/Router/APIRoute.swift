import CookieJar
import Foundation
import HTTPServer
import HTTPTypes
import SiteConfig

/// The socket's routes (SPEC section 8): each one's method, path pattern and query parameters, in one table.
/// The router is built from it (``APIRoutes/register(on:)``), the answers the router cannot give read it
/// (405 for a known path with another method, the bounded `route` label of the metrics), and so does the fuzz
/// target `socket-request`.
enum APIRoute: CaseIterable, Sendable {
    case health, sites, site, cookies, refresh, report, setCookie, events, reload, metrics, answer, proxy

    var method: HTTPRequest.Method {
        switch self {
        case .health, .sites, .site, .cookies, .events, .metrics, .proxy: .get
        case .refresh, .report, .setCookie, .reload, .answer: .post
        }
    }

    /// Every method the route answers: its ``method``, and for the egress route each method a client may send
    /// through it.
    var methods: [HTTPRequest.Method] {
        self == .proxy ? [.get, .head, .post, .put, .patch, .delete, .options] : [method]
    }

    /// The path, with `{name}` for a site's name (one non-empty segment) and `**` for any rest (the site's own
    /// path, also none).
    var pattern: String {
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
    var streamsRequestBody: Bool { self == .proxy }

    /// The query parameters the route takes, in the order they are checked.
    var parameters: [QueryParameter] {
        switch self {
        case .health, .sites, .site, .events, .reload, .metrics, .proxy: []
        case .cookies: [.format, .url, .minValid, .wait]
        case .refresh: [.wait]
        case .report: [.status]
        case .setCookie: [.url]
        case .answer: [.name]
        }
    }

    /// A segment of a route's pattern, as a path's segment is compared with it.
    private enum PatternPart {
        /// The segment itself, as bytes.
        case literal([UInt8])
        /// `{name}`: any non-empty segment.
        case name
        /// A last `**`: any rest, also none.
        case rest
    }

    /// Each route's pattern, split into segments once.
    private static let patterns = allCases.map { route in
        let parts = route.pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { part -> PatternPart in
            part == "**" ? .rest : part.hasPrefix("{") ? .name : .literal(Array(part.utf8))
        }
        return (route, parts)
    }
    /// Those of the routes whose body streams on to a site: every request's head is matched against them only.
    private static let streamingPatterns = patterns.filter { $0.0.streamsRequestBody }

    /// The routes whose pattern `path` matches, whatever their method.
    static func matching(_ path: Substring) -> [APIRoute] {
        patterns.compactMap { route, parts in matches(parts, path.utf8) ? route : nil }
    }

    static func matching(_ path: String) -> [APIRoute] {
        matching(path[...])
    }

    /// The `{name}` segment of a path its route's pattern matched (the third: `/v1/sites/{name}/...`),
    /// percent-decoded; "" for a route without one.
    static func siteName(in path: Substring) -> String {
        var segments = PathSegments(path.utf8)
        for _ in 0..<3 { _ = segments.next() }
        guard let segment = segments.next() else { return "" }
        return PercentDecoding.decode(Substring(segment))
    }

    /// Whether `path` (without its query) names a route whose body streams on to a site.
    static func streamsRequestBody(path: Substring) -> Bool {
        streamingPatterns.contains { matches($0.1, path.utf8) }
    }

    /// Whether a pattern's segments match a path's (those after its first `/`). The path is read as bytes, one
    /// segment at a time, without an array or a `Character`: this runs for every request's head.
    private static func matches(_ parts: [PatternPart], _ path: Substring.UTF8View) -> Bool {
        var given = PathSegments(path)
        _ = given.next()
        for part in parts {
            switch part {
            case .rest: return true
            case .name: guard let segment = given.next(), !segment.isEmpty else { return false }
            case .literal(let bytes): guard let segment = given.next(), segment.elementsEqual(bytes) else { return false }
            }
        }
        return given.next() == nil
    }
}

/// A path's segments between its `/`s, in order (`/a//b` gives "", "a", "", "b"), as bytes.
private struct PathSegments: IteratorProtocol {
    private var rest: Substring.UTF8View?

    init(_ path: Substring.UTF8View) { rest = path }

    mutating func next() -> Substring.UTF8View? {
        guard let remaining = rest else { return nil }
        guard let slash = remaining.firstIndex(of: UInt8(ascii: "/")) else {
            rest = nil
            return remaining
        }
        rest = remaining[remaining.index(after: slash)...]
        return remaining[..<slash]
    }
}

/// A query parameter one of the routes takes.
enum QueryParameter: String, Sendable {
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

/// A request's query parameters, read and checked for its route: an unknown parameter, a repeated one or a
/// value of the wrong shape is a 400 naming it.
struct RouteQuery: Sendable {
    var format: CookieFormat?
    var url: URL?
    var minValid: Duration?
    var wait: Duration?
    var status: Int?
    var name: String?

    init(_ request: ServerRequest, for route: APIRoute) throws(APIError) {
        try self.init(query: request.query, for: route)
    }

    /// - Parameter query: the request target's query, without its `?`.
    init(query: Substring?, for route: APIRoute) throws(APIError) {
        let allowed = route.parameters
        var values: [QueryParameter: String] = [:]
        for (key, value) in ServerRequest.parameters(in: query) {
            guard let parameter = QueryParameter(rawValue: String(key)), allowed.contains(parameter) else {
                let known = allowed.isEmpty ? "this route takes none" : "expected \(allowed.map(\.rawValue).sorted().joined(separator: ", "))"
                throw APIError.badParameter(String(key), "unknown parameter (\(known))")
            }
            guard values[parameter] == nil else { throw APIError.badParameter(parameter.rawValue, "given more than once") }
            values[parameter] = String(value)
        }
        for parameter in allowed {
            guard let text = values[parameter] else { continue }
            switch parameter {
            case .format: format = try Self.format(text, parameter)
            case .url: url = try Self.url(text, parameter)
            case .minValid: minValid = try Self.duration(text, parameter)
            case .wait: wait = try Self.duration(text, parameter)
            case .status: status = try Self.integer(text, parameter, in: 100...599)
            case .name: name = text
            }
        }
    }

    private static func format(_ text: String, _ parameter: QueryParameter) throws(APIError) -> CookieFormat {
        guard let format = CookieFormat(rawValue: text.lowercased()) else {
            throw APIError.badParameter(
                parameter.rawValue, "unknown format '\(text)' (expected \(CookieFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return format
    }

    private static func duration(_ text: String, _ parameter: QueryParameter) throws(APIError) -> Duration {
        guard let duration = DurationText.parse(text) else {
            throw APIError.badParameter(parameter.rawValue, "'\(text)' is not a duration (like 500ms, 30s, 10m, 1h)")
        }
        return duration
    }

    /// An absolute http or https URL with a host, as the jar needs one.
    private static func url(_ text: String, _ parameter: QueryParameter) throws(APIError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              CookieRules.canonicalHost(of: url) != nil
        else {
            throw APIError.badParameter(parameter.rawValue, "'\(text)' is not an absolute http or https URL with a host")
        }
        return url
    }

    private static func integer(_ text: String, _ parameter: QueryParameter, in range: ClosedRange<Int>) throws(APIError) -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw APIError.badParameter(parameter.rawValue, "'\(text)' is not a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}
