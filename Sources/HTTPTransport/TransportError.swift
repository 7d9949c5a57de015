import Foundation

/// Why a request got no response. The message is for people and never holds a header or body value.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The host name did not resolve.
        case dns
        /// The TCP connection was refused, reset or unreachable.
        case connect
        /// Certificate verification or the TLS handshake failed.
        case tls
        /// `timeout` or `connect_timeout` ran out.
        case timeout
        /// The body went past ``TransportOptions/maxBodySize``.
        case bodyTooLarge
        /// The proxy refused or could not be reached.
        case proxy
        /// The URL or an option was not usable (unsupported scheme, bad `resolve` entry, missing CA file...).
        case invalidRequest
        /// The server broke the protocol (bad status line, truncated body...).
        case protocolError
        /// A streamed response's connection failed or closed after its head arrived, before the body's end
        /// (``StreamingHTTPClient``; a buffered response reports such a body as `protocolError`).
        case interrupted
        /// A streamed request body could not be sent as announced: its sequence threw, or its bytes did not
        /// add up to its length (``RequestBody/stream(length:chunks:)``).
        case requestBody
        /// The calling task was cancelled, or the client was shut down, before the response arrived.
        case cancelled
        /// Anything else libcurl reports.
        case other

        /// What happened, in the user's words ("cannot connect"), for the start of a message.
        public var summary: String {
            switch self {
            case .dns: "the host name does not resolve"
            case .connect: "cannot connect to the server"
            case .tls: "the TLS connection failed"
            case .timeout: "the request timed out"
            case .bodyTooLarge: "the response is too large"
            case .proxy: "the proxy failed"
            case .invalidRequest: "the request cannot be sent"
            case .protocolError: "the server's answer is not usable HTTP"
            case .interrupted: "the server's answer was cut off"
            case .requestBody: "the request body could not be read"
            case .cancelled: "the request was cancelled"
            case .other: "the request failed"
            }
        }
    }

    public var kind: Kind
    /// The URL of the request, for the error message (without its query, which may hold a token).
    public var url: URL?
    public var message: String

    public init(kind: Kind, url: URL?, message: String) {
        self.kind = kind
        self.url = url
        self.message = message
    }

    /// True when the site could not be reached at all: the daemon treats these as "site down", not "logged out".
    public var isUnreachable: Bool { [.dns, .connect, .tls, .timeout, .proxy].contains(kind) }

    public var description: String {
        let what = message.isEmpty ? kind.summary : "\(kind.summary): \(message)"
        guard let url else { return what }
        return "\(url.redactedForLog): \(what)"
    }
}

extension URL {
    /// scheme://host[:port]/path, without user info, query or fragment (which may hold secrets).
    public var redactedForLog: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else { return "<url>" }
        components.user = nil
        components.password = nil
        let hadQuery = components.query != nil
        components.query = nil
        components.fragment = nil
        return (components.string ?? "<url>") + (hadQuery ? "?…" : "")
    }
}
