import Daemon
import HTTPServer
import HTTPTypes
import JSON
import SiteConfig
import NIOCore

/// Every error the socket answers, as `{"error":{"code":"...","message":"..."}}` (SPEC section 8). Messages
/// name sites, parameters and states, never a cookie value.
public struct APIError: Error, Sendable, Hashable {
    /// The machine-readable codes a client can rely on.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// 400: a query parameter is unknown or its value is invalid (the message names it).
        case badRequest = "bad_request"
        /// 403: the action needs a manager (the daemon's uid, root or `socket.allow_uids`), or the peer's
        /// credentials could not be read.
        case forbidden
        /// 404: no site of that name the peer may read (a site it may not read answers the same).
        case unknownSite = "unknown_site"
        /// 404: no such route.
        case notFound = "not_found"
        /// 405: the route exists with another method.
        case methodNotAllowed = "method_not_allowed"
        /// 408: the request's head and body did not arrive within ``SocketServer/Limits/requestDeadline``.
        case requestTimeout = "request_timeout"
        /// 409: the site is disabled.
        case disabled
        /// 409: a login was asked for but cannot start (a reader's `min_valid` past the site's session lifetime
        /// among the reasons, which the message names).
        case cannotLogIn = "cannot_log_in"
        /// 409: a report for a site without `check:`.
        case noCheck = "no_check"
        /// 409: an answer for a site whose login waits for no prompt (of that name).
        case noPrompt = "no_prompt"
        /// 413: the request body is larger than ``SocketServer/Limits/maxBodyBytes``.
        case tooLarge = "too_large"
        /// 503: no session fit to serve.
        case noSession = "no_session"
        /// 503: the peer, or all peers together, hold as many connections or event streams as
        /// ``SocketServer/Limits`` allows.
        case tooMany = "too_many"
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

    /// The JSON error response.
    func response() -> ServerResponse {
        WireBody.json(body, status: status)
    }

    private var body: JSONValue {
        .object([("error", .object([("code", .string(code.rawValue)), ("message", .string(message))]))])
    }

    /// The 404 of a site that does not exist, which a site the peer may not read answers too, byte for byte.
    static func unknownSite(_ name: String) -> APIError {
        APIError(.notFound, .unknownSite, "no site named '\(name)'")
    }

    /// The 403 of a reader (or a stranger, for what concerns no one site) asking for what only a manager may do.
    static func managerNeeded(uid: UInt32, to action: String) -> APIError {
        APIError(
            .forbidden, .forbidden,
            "uid \(uid) may not \(action): that needs a manager (the daemon's uid, root or socket.allow_uids)")
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
        case .cannotLogIn, .minValidTooLong: self.init(.conflict, .cannotLogIn, error.description)
        case .noCheck: self.init(.conflict, .noCheck, error.description)
        case .noPrompt: self.init(.conflict, .noPrompt, error.description)
        }
    }
}

/// Response bodies in the socket's formats.
enum WireBody {
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> ServerResponse {
        var text = JSONWriter.write(value)
        text += "\n"
        return ServerResponse(status: status, headers: [.contentType: "application/json"], body: .text(text))
    }

    static func text(_ text: String, contentType: String, status: HTTPResponse.Status = .ok) -> ServerResponse {
        ServerResponse(status: status, headers: [.contentType: contentType], body: .text(text))
    }
}

extension APIError {
    /// The JSON answer to what the server core refuses by itself, before a request reaches a route.
    @Sendable static func answer(to refusal: ServerRefusal) -> ServerResponse {
        switch refusal {
        case .requestTimeout(let deadline):
            APIError(.requestTimeout, .requestTimeout, "the request did not arrive whole within \(DurationText.format(deadline))").response()
        case .headerTooLarge:
            APIError(.requestHeaderFieldsTooLarge, .tooLarge, "the request's header fields are larger than the daemon reads").response()
        case .malformed:
            APIError(.badRequest, .badRequest, "the request is not HTTP/1.1").response()
        }
    }
}
