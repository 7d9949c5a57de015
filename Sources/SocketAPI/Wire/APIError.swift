import Daemon
import Hummingbird
import JSON
import NIOCore

/// Every error the socket answers, as `{"error":{"code":"...","message":"..."}}` (SPEC section 8). Messages
/// name sites, parameters and states, never a cookie value.
public struct APIError: Error, HTTPResponseError, Sendable, Hashable {
    /// The machine-readable codes a client can rely on.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// 400: a query parameter is unknown or its value is invalid (the message names it).
        case badRequest = "bad_request"
        /// 403: the peer may not see this site.
        case forbidden
        /// 404: no site of that name.
        case unknownSite = "unknown_site"
        /// 404: no such route.
        case notFound = "not_found"
        /// 405: the route exists with another method.
        case methodNotAllowed = "method_not_allowed"
        /// 409: the site is disabled.
        case disabled
        /// 409: a login was asked for but cannot start.
        case cannotLogIn = "cannot_log_in"
        /// 409: a report for a site without `check:`.
        case noCheck = "no_check"
        /// 413: the request body is larger than ``SocketServer/Limits/maxBodyBytes``.
        case tooLarge = "too_large"
        /// 503: no session fit to serve.
        case noSession = "no_session"
        /// 504: `wait` ran out before a login ended, or a proxied request's site stayed silent.
        case timeout
        /// 502: a proxied request's site could not be reached, or its answer broke off before its head.
        case badGateway = "bad_gateway"
        /// 500: a fault of the daemon.
        case `internal`
    }

    public var status: HTTPResponse.Status
    public var code: Code
    public var message: String

    public init(_ status: HTTPResponse.Status, _ code: Code, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The JSON error response.
    func response() -> Response {
        let body: JSONValue = .object([
            ("error", .object([("code", .string(code.rawValue)), ("message", .string(message))]))
        ])
        return WireBody.json(body, status: status)
    }

    static func badParameter(_ name: String, _ problem: String) -> APIError {
        APIError(.badRequest, .badRequest, "query parameter '\(name)': \(problem)")
    }

    /// The answer to one of the keeper's refusals.
    init(_ error: ClientRequestError) {
        switch error {
        case .unknownSite: self.init(.notFound, .unknownSite, error.description)
        case .disabled: self.init(.conflict, .disabled, error.description)
        case .noSession: self.init(.serviceUnavailable, .noSession, error.description)
        case .timedOut: self.init(.gatewayTimeout, .timeout, error.description)
        case .cannotLogIn: self.init(.conflict, .cannotLogIn, error.description)
        case .noCheck: self.init(.conflict, .noCheck, error.description)
        }
    }
}

/// Response bodies in the socket's formats.
enum WireBody {
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        var text = JSONWriter.write(value)
        text += "\n"
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func text(_ text: String, contentType: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: contentType], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
