internal import CCurl
import Foundation
import HTTPTransport

/// Translates a failed transfer's `CURLcode` into a ``TransportError`` (the layer boundary: nothing of
/// libcurl leaves this module).
struct CurlFailure {
    var code: CURLcode
    /// libcurl's `CURLOPT_ERRORBUFFER` text, already scrubbed by ``LogScrubber``.
    var detail: String
    var usedProxy: Bool
    /// `CURLINFO_HTTP_CONNECTCODE`: the proxy's answer to CONNECT, 0 when there was none.
    var proxyConnectStatus: Int
    /// The write callback refused data because of `maxBodySize`.
    var bodyCapExceeded: Bool
    var maxBodySize: Int
    /// The TLS handshake completed on a new connection and the server then closed it before answering.
    /// With TLS 1.3 the client finishes its handshake before the server has checked the client's
    /// certificate, so this is how a server refuses a missing or unaccepted client certificate.
    var closedRightAfterTLSHandshake: Bool
    /// A response's header block had started (its status line arrived) and had not ended when the transfer
    /// failed.
    var headerBlockOpen: Bool = false

    func transportError(url: URL) -> TransportError {
        let kind = self.kind
        return TransportError(kind: kind, url: url, message: message(for: kind))
    }

    /// libcurl refused the response's header block: one line over its 100 KiB `CURL_MAX_HTTP_HEADER`
    /// (reported as "out of memory", with or without a word on headers depending on the libcurl version:
    /// 7.88 says only "Out of memory", so an out-of-memory failure inside an open header block counts) or
    /// all of them over its 300 KiB total ("Too large response headers").
    var responseHeadersTooLarge: Bool {
        (code == CURLE_OUT_OF_MEMORY && (headerBlockOpen || detail.localizedCaseInsensitiveContains("header")))
            || detail.localizedCaseInsensitiveContains("too large response headers")
    }

    var kind: TransportError.Kind {
        if responseHeadersTooLarge { return .protocolError }
        if bodyCapExceeded || code == CURLE_FILESIZE_EXCEEDED { return .bodyTooLarge }
        if proxyConnectStatus != 0 && proxyConnectStatus / 100 != 2 { return .proxy }
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST:
            return .dns
        case CURLE_COULDNT_RESOLVE_PROXY, CURLE_PROXY:
            return .proxy
        case CURLE_COULDNT_CONNECT:
            // With a proxy the only peer we connect to is the proxy.
            return usedProxy ? .proxy : .connect
        case CURLE_INTERFACE_FAILED:
            return .connect
        case CURLE_SEND_FAIL_REWIND:
            // A reused connection was closed under a streamed request body that cannot be sent again.
            return .connect
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR:
            // A TLS alert read after the handshake (libcurl reports it as a receive error) or a reset right
            // after it is the server refusing the TLS session, not a network failure.
            return closedRightAfterTLSHandshake || detail.contains("SSL") ? .tls : .connect
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_CIPHER, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED,
            CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            return .tls
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_NOT_BUILT_IN, CURLE_BAD_FUNCTION_ARGUMENT,
            CURLE_UNKNOWN_OPTION, CURLE_SETOPT_OPTION_SYNTAX, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CRL_BADFILE, CURLE_FAILED_INIT:
            return .invalidRequest
        case CURLE_WEIRD_SERVER_REPLY, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
            CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP3, CURLE_RANGE_ERROR:
            return .protocolError
        default:
            return .other
        }
    }

    private func message(for kind: TransportError.Kind) -> String {
        if kind == .bodyTooLarge {
            return "the response body is larger than \(Self.describe(bytes: maxBodySize)), the most SessionKeeper reads "
                + "from one response; the transfer was stopped"
        }
        if responseHeadersTooLarge {
            return "the server sent response headers larger than libcurl accepts (100 KiB for one header, "
                + "300 KiB for all of them); the response was dropped"
        }
        let summary = String(cString: ccurl_easy_strerror(code))
        var text = detail.isEmpty ? summary : detail.contains(summary) ? detail : "\(detail) (\(summary))"
        if kind == .tls && closedRightAfterTLSHandshake {
            text += "; the server closed the connection right after the TLS handshake, which is how TLS 1.3 servers "
                + "refuse a missing or untrusted client certificate"
        }
        if kind == .proxy && proxyConnectStatus != 0 {
            text += "; the proxy answered CONNECT with status \(proxyConnectStatus)"
        }
        return "\(text) [libcurl error \(code.rawValue)]"
    }

    /// "8 MiB", "512 KiB", "100 bytes".
    static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}

/// Removes secrets from text libcurl wrote (its error buffer can quote the URL or the proxy string).
/// Header and body values of the request are replaced too, so a message can never echo one.
struct LogScrubber {
    private var replacements: [(String, String)] = []

    init(url: URL, proxy: String?, headerValues: [String]) {
        // Longest first so a value containing another is replaced whole.
        var pairs: [(String, String)] = [(url.absoluteString, url.redactedForLog)]
        if let query = url.query, !query.isEmpty { pairs.append((query, "…")) }
        if let user = url.user, !user.isEmpty { pairs.append((user, "<user>")) }
        if let password = url.password, !password.isEmpty { pairs.append((password, "<password>")) }
        if let proxy, !proxy.isEmpty {
            let redacted = URL(string: proxy)?.redactedForLog ?? "<proxy>"
            pairs.append((proxy, redacted))
            if let proxyURL = URL(string: proxy) {
                if let user = proxyURL.user, !user.isEmpty { pairs.append((user, "<user>")) }
                if let password = proxyURL.password, !password.isEmpty { pairs.append((password, "<password>")) }
            }
        }
        // Very short values ("1", "on") would mangle ordinary words and cannot carry a real secret.
        for value in headerValues where value.count >= 4 { pairs.append((value, "<redacted>")) }
        replacements = pairs.sorted { $0.0.count > $1.0.count }
    }

    func scrub(_ text: String) -> String {
        var result = text
        for (secret, replacement) in replacements where result.contains(secret) {
            result = result.replacingOccurrences(of: secret, with: replacement)
        }
        return result
    }
}
