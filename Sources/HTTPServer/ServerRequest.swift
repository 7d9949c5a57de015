import HTTPTypes
import NIOCore

/// One request as the server hands it to its ``HTTPResponder``: the head as it was decoded, the path and query
/// split once, the connection it came on, and its body, which the responder reads as it arrives (or never).
public struct ServerRequest: Sendable {
    /// The body's type, by a name that other modules' `RequestBody` types do not shadow.
    public typealias Body = RequestBody

    /// The head. HTTPTypes holds the first `Host` field as ``HTTPRequest/authority``; any further one stays among
    /// the fields.
    public let head: HTTPRequest
    /// The request target's path, as the client wrote it (percent-encoding kept).
    public let path: Substring
    /// The request target's query without its `?`; nil when the target has none.
    public let query: Substring?
    /// The body: empty for a request that declares none.
    public let body: RequestBody
    /// The connection the request came on (its peer, its addresses).
    public let channel: any Channel

    public init(head: HTTPRequest, body: RequestBody = .empty, channel: any Channel) {
        self.head = head
        let target = head.path ?? "/"
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = target[..<mark]
            query = target[target.utf8.index(after: mark)...]
        } else {
            path = target[...]
            query = nil
        }
        self.body = body
        self.channel = channel
    }

    public var method: HTTPRequest.Method { head.method }
    public var headers: HTTPFields { head.headerFields }

    /// The query's `name=value` pairs in order, each percent-decoded (a `+` stays a `+`: RFC 3986 gives it no
    /// meaning; only HTML forms' encoding does, which ``FormFields`` reads). A pair without `=` has an empty value.
    public var queryParameters: [(name: String, value: String)] { Self.parameters(in: query) }

    /// The `name=value` pairs of a query (without its `?`), as ``queryParameters`` reads them.
    public static func parameters(in query: Substring?) -> [(name: String, value: String)] {
        guard let query else { return [] }
        // Split on the bytes `&` and `=`, not on Characters: `split` by Character asks about grapheme breaks at
        // every position, which was most of the cost of reading a query (each request of the cookies route has
        // one). Both are ASCII, so every cut is a character boundary of the query.
        var pairs: [(name: String, value: String)] = []
        let bytes = query.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            if start < end {
                if let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "=")) {
                    pairs.append((PercentDecoding.decode(query[start..<equals]), PercentDecoding.decode(query[bytes.index(after: equals)..<end])))
                } else {
                    pairs.append((PercentDecoding.decode(query[start..<end]), ""))
                }
            }
            start = end == bytes.endIndex ? end : bytes.index(after: end)
        }
        return pairs
    }

    /// The value of the first query parameter named `name`.
    public func queryParameter(_ name: String) -> String? {
        queryParameters.first { $0.name == name }?.value
    }

    /// The value of the first cookie named `name` in the request's `Cookie` fields (RFC 6265 section 5.4:
    /// `name=value` pairs separated by `; `).
    public func cookie(_ name: String) -> String? {
        for field in head.headerFields[values: .cookie] {
            for pair in field.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                if trimmed[..<equals] == name { return String(trimmed[trimmed.index(after: equals)...]) }
            }
        }
        return nil
    }
}

/// Percent-decoding of URL components (RFC 3986 section 2.1).
public enum PercentDecoding {
    /// `text` with each `%XX` replaced by its byte; a `%` not followed by two hex digits stays as it is, and bytes
    /// that are not UTF-8 become U+FFFD.
    public static func decode(_ text: Substring) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var index = text.utf8.startIndex
        let end = text.utf8.endIndex
        while index < end {
            let byte = text.utf8[index]
            if byte == UInt8(ascii: "%"), let high = text.utf8.index(index, offsetBy: 1, limitedBy: end), high < end,
               let low = text.utf8.index(index, offsetBy: 2, limitedBy: end), low < end,
               let h = hexValue(text.utf8[high]), let l = hexValue(text.utf8[low])
            {
                bytes.append(h << 4 | l)
                index = text.utf8.index(after: low)
            } else {
                bytes.append(byte)
                index = text.utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
