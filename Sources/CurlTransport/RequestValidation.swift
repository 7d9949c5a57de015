import Foundation
import HTTPTransport

/// Checks a request and its options before any libcurl call, so a bad value fails with a message that
/// names the field (never its value: header values may be secrets).
enum RequestValidation {
    /// Methods that define a request body (RFC 9110 sections 9.3.3, 9.3.4; RFC 5789): sent with
    /// `Content-Length: 0` when the request has no body, as RFC 9110 section 8.6 asks.
    static let methodsWithBodySemantics: Set<String> = ["POST", "PUT", "PATCH"]

    static func validate(_ request: HTTPRequest, _ options: TransportOptions) throws(TransportError) {
        try validate(
            method: request.method, url: request.url, headers: request.headers,
            hasBody: !(request.body?.isEmpty ?? true), options)
    }

    static func validate(_ request: StreamingRequest, _ options: TransportOptions) throws(TransportError) {
        let hasBody: Bool
        switch request.body {
        case .empty: hasBody = false
        case .data(let data): hasBody = !data.isEmpty
        case .stream(let length, _): hasBody = length != 0
        }
        if case .stream(let length?, _) = request.body, length < 0 {
            throw TransportError(kind: .invalidRequest, url: request.url, message: "the body's length must not be negative")
        }
        try validate(method: request.method, url: request.url, headers: request.headers, hasBody: hasBody, options)
    }

    /// `hasBody`: the request carries a body that may not be empty.
    private static func validate(
        method: String, url: URL, headers: HTTPHeaders, hasBody: Bool, _ options: TransportOptions
    ) throws(TransportError) {
        func fail(_ message: String) -> TransportError {
            TransportError(kind: .invalidRequest, url: url, message: message)
        }
        // Compared and tested as written: no lower-cased copy, no percent-decoded host (only its presence counts).
        guard let scheme = url.scheme, scheme.caseInsensitiveEquals("http") || scheme.caseInsensitiveEquals("https") else {
            throw fail("only http and https URLs are supported")
        }
        guard let host = url.host(percentEncoded: true), !host.isEmpty else { throw fail("the URL has no host") }
        guard isToken(method) else {
            throw fail("the method is not an RFC 9110 token (section 9.1)")
        }
        if method == "HEAD", hasBody {
            throw fail("a HEAD request cannot carry a body")
        }
        for field in headers {
            guard isToken(field.name) else { throw fail("header name \"\(printable(field.name))\" is not a token") }
            guard isFieldValue(field.value) else {
                throw fail("the value of header \(field.name) holds a control character (CR, LF or NUL)")
            }
        }
        if let userAgent = options.userAgent, !isFieldValue(userAgent) {
            throw fail("user_agent holds a control character (CR, LF or NUL)")
        }
        guard options.timeout > .zero else { throw fail("timeout must be positive") }
        guard options.connectTimeout > .zero else { throw fail("connect_timeout must be positive") }
        guard options.maxBodySize >= 0 else { throw fail("max_body_size must not be negative") }
        for (index, entry) in options.resolve.enumerated() {
            if let problem = resolveEntryProblem(entry) {
                throw fail("resolve entry \(index + 1) (\(printable(entry))): \(problem)")
            }
        }
        // curl takes "HOST:PORT" without a scheme as an HTTP proxy.
        if let proxy = options.proxy, !proxy.isEmpty, URL(string: proxy)?.host == nil,
            URL(string: "http://" + proxy)?.host == nil
        {
            throw fail("proxy is not a URL with a host (expected e.g. socks5h://127.0.0.1:9050)")
        }
        for (name, path) in [("ca_file", options.caFile), ("client_cert.cert", options.clientCertificate?.certificatePath),
                             ("client_cert.key", options.clientCertificate?.keyPath)] {
            if let path, !FileManager.default.isReadableFile(atPath: path) {
                throw fail("\(name) \(path) is not a readable file")
            }
        }
        switch options.httpVersion {
        case .http2? where !CurlLibrary.supportsHTTP2:
            throw fail("http_version 2 is not available: libcurl \(CurlLibrary.version) was built without HTTP/2")
        case .http3? where !CurlLibrary.supportsHTTP3:
            throw fail("http_version 3 is not available: libcurl \(CurlLibrary.version) was built without HTTP/3")
        default:
            break
        }
    }

    /// `HOST:PORT:ADDRESS[,ADDRESS...]` as curl's `--resolve` takes it (an optional leading `+`, `-HOST:PORT`
    /// to drop an earlier entry). IPv6 addresses go in brackets.
    static func resolveEntryProblem(_ entry: String) -> String? {
        guard let (host, port, addresses) = ConnectPins.parse(entry) else {
            return entry.hasPrefix("-") ? "expected -HOST:PORT" : "expected HOST:PORT:ADDRESS"
        }
        guard !host.isEmpty else { return "the host is empty" }
        guard isPort(port) else { return "the port must be a number from 1 to 65535" }
        guard let addresses else { return nil }
        guard addresses != [""] else { return "no address after HOST:PORT:" }
        for address in addresses {
            guard isAddress(address) else {
                return "\"\(address)\" is not an IPv4 address or a bracketed IPv6 address"
            }
        }
        if addresses.count > 1, ConnectPins.alias(for: addresses).utf8.count > ConnectPins.maxAliasLength {
            return "too many addresses for one pin"
        }
        return nil
    }

    private static func isPort(_ text: Substring) -> Bool {
        guard let port = Int(text), text.allSatisfy(\.isASCII) else { return false }
        return (1...65535).contains(port)
    }

    private static func isAddress(_ text: Substring) -> Bool {
        if text.hasPrefix("[") && text.hasSuffix("]") {
            var storage = in6_addr()
            return inet_pton(AF_INET6, String(text.dropFirst().dropLast()), &storage) == 1
        }
        var storage = in_addr()
        return inet_pton(AF_INET, String(text), &storage) == 1
    }

    /// RFC 9110 section 5.6.2 `token`.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// RFC 9110 section 5.5: no CR, LF or NUL may appear in a field value (they would split the request).
    static func isFieldValue(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }

    /// Names and resolve entries are configuration, not secrets; control characters are escaped.
    private static func printable<S: StringProtocol>(_ text: S) -> String {
        String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so a positive duration never becomes 0 (which libcurl reads as "none").
    var roundedUpMilliseconds: Int {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        let remainder = attoseconds % 1_000_000_000_000_000
        return Int(remainder > 0 ? millis + 1 : millis)
    }
}
