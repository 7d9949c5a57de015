import CookieJar
import Foundation
import HTTPServer
import HTTPTypes
import SiteConfig
import SocketRoutes

extension SocketRoute {
    /// ``methods`` as HTTPTypes' methods, made once per route: the router compares every request's with them.
    var httpMethods: [HTTPRequest.Method] { Self.httpMethodTable[self] ?? [] }

    private static let httpMethodTable: [SocketRoute: [HTTPRequest.Method]] = Dictionary(uniqueKeysWithValues: allCases.map { route in
        (route, route.methods.map { HTTPRequest.Method($0)! })
    })

    /// The `{name}` segment of a path its route's pattern matched, percent-decoded; "" for a route without one.
    static func siteName(in path: Substring) -> String {
        siteSegment(in: path).map(PercentDecoding.decode) ?? ""
    }
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

    init(_ request: ServerRequest, for route: SocketRoute) throws(APIError) {
        try self.init(query: request.query, for: route)
    }

    /// - Parameter query: the request target's query, without its `?`.
    init(query: Substring?, for route: SocketRoute) throws(APIError) {
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
