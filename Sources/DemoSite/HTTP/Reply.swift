import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// Builders for the site's responses. Every one carries `Cache-Control: no-store`: pages with tokens
/// and account data must not be cached.
enum Reply {
    static func html(_ page: String, status: HTTPResponse.Status = .ok, cookies: [String] = []) -> ServerResponse {
        make(status, contentType: "text/html; charset=utf-8", body: page, cookies: cookies)
    }

    static func javaScript(_ source: String) -> ServerResponse {
        make(.ok, contentType: "text/javascript; charset=utf-8", body: source, cookies: [])
    }

    static func text(_ status: HTTPResponse.Status, _ message: String) -> ServerResponse {
        make(status, contentType: "text/plain; charset=utf-8", body: message + "\n", cookies: [])
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, cookies: [String] = []) -> ServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs of strings and numbers cannot fail; an empty object is the fallback.
        let body = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return make(status, contentType: "application/json", body: body, cookies: cookies)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> ServerResponse {
        json(["error": message], status: status)
    }

    /// A redirect with an empty body; `status` is `.found` (302) or `.seeOther` (303).
    static func redirect(_ status: HTTPResponse.Status, to location: String, cookies: [String] = []) -> ServerResponse {
        var response = make(status, contentType: nil, body: "", cookies: cookies)
        response.headers[.location] = location
        return response
    }

    static func noContent(cookies: [String] = []) -> ServerResponse {
        make(.noContent, contentType: nil, body: nil, cookies: cookies)
    }

    private static func make(_ status: HTTPResponse.Status, contentType: String?, body: String?, cookies: [String]) -> ServerResponse {
        var headers = HTTPFields()
        if let contentType { headers[.contentType] = contentType }
        headers[.cacheControl] = "no-store"
        headers[values: .setCookie].append(contentsOf: cookies)
        guard let body else { return ServerResponse(status: status, headers: headers) }
        return ServerResponse(status: status, headers: headers, body: .text(body))
    }
}

/// JSON bodies of the API.
struct UserInfo: Codable, Sendable {
    let name: String
}

struct MeResponse: Codable, Sendable {
    let user: UserInfo
    /// RFC 3339, UTC, whole seconds.
    let expiresAt: String

    enum CodingKeys: String, CodingKey {
        case user
        case expiresAt = "expires_at"
    }
}

struct APILoginRequest: Decodable, Sendable {
    let username: String
    let password: String
    /// The TOTP code, needed when the second factor is on.
    let code: String?
}

struct APILoginResponse: Codable, Sendable {
    let token: String
    let user: UserInfo
}

enum RFC3339 {
    /// RFC 3339 5.6 date-time in UTC with whole seconds, e.g. "2026-11-21T12:00:00Z".
    static func string(from date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
    }
}
