import CookieJar
import Foundation
import HTTPTransport
import JSON
import SiteConfig
import XMLQuery

/// `extract:` and `expect:` over one response (SPEC section 3). Failures come back as plain descriptions
/// (what was wanted, what was found) that the engine wraps into a ``FlowError`` after masking.
enum ResponseInspection {
    struct Mismatch: Error, Sendable {
        var expected: String
        var found: String
    }

    // MARK: Extraction

    /// The response with its body parsed at most once per step, however many entries read it.
    final class ParsedResponse {
        let response: HTTPResponse
        private var document: Result<Document, Mismatch>?
        private var jsonValue: Result<JSONValue, Mismatch>?

        init(_ response: HTTPResponse) { self.response = response }

        func html() throws(Mismatch) -> Document {
            if document == nil {
                do { document = .success(try ResponseInspection.parse(response)) } catch { document = .failure(error) }
            }
            return try document!.get()
        }

        func json() throws(Mismatch) -> JSONValue {
            if jsonValue == nil {
                do { jsonValue = .success(try ResponseInspection.json(response)) } catch { jsonValue = .failure(error) }
            }
            return try jsonValue!.get()
        }
    }

    static func extract(
        _ extraction: Extraction, from parsed: ParsedResponse, storage: CookieStorage?, now: Date
    ) throws(Mismatch) -> String {
        let response = parsed.response
        switch extraction {
        case .regex(let pattern):
            let regex = try compile(pattern)
            let text = response.bodyText
            let range = NSRange(text.startIndex..., in: text)
            guard let match = regex.firstMatch(in: text, range: range) else {
                throw Mismatch(expected: "a match of regex /\(pattern)/ in the body", found: "no match")
            }
            let group = match.numberOfRanges > 1 ? 1 : 0
            guard let captured = Range(match.range(at: group), in: text) else {
                throw Mismatch(expected: "regex /\(pattern)/ to capture its first group", found: "the group did not participate")
            }
            return String(text[captured])
        case .xpath(let expression):
            let document = try parsed.html()
            let value: String?
            do { value = try document.firstString(expression) } catch {
                throw Mismatch(expected: "a value for XPath \(expression)", found: error.description)
            }
            guard let value else { throw Mismatch(expected: "a node matching XPath \(expression)", found: "no node") }
            return value
        case .json(let pointer):
            let document = try parsed.json()
            guard let value = JSONPointer.resolve(pointer, in: document) else {
                throw Mismatch(expected: "a value at JSON pointer \(pointer)", found: "nothing there")
            }
            return value.plainText
        case .header(let name):
            guard let value = response.headers[name] else {
                throw Mismatch(expected: "a \(name) header", found: "none")
            }
            return value
        case .cookie(let name):
            guard let cookie = liveCookie(named: name, url: response.url, storage: storage, now: now) else {
                throw Mismatch(expected: "a stored cookie named \(name)", found: "none")
            }
            return cookie.value
        case .status:
            return String(response.status)
        case .url(let query):
            guard let query else { return response.url.absoluteString }
            let items = URLComponents(url: response.url, resolvingAgainstBaseURL: true)?.queryItems ?? []
            guard let item = items.first(where: { $0.name == query }) else {
                throw Mismatch(expected: "a query item \(query) in the final URL", found: "none")
            }
            return item.value ?? ""
        }
    }

    // MARK: Expectations

    static func check(
        _ kind: Expectation.Kind, response parsed: ParsedResponse, storage: CookieStorage?, now: Date
    ) throws(Mismatch) {
        let response = parsed.response
        switch kind {
        case .status(let accepted):
            guard accepted.contains(response.status) else {
                let wanted = accepted.count == 1 ? "status \(accepted[0])" : "status in \(accepted)"
                throw Mismatch(expected: wanted, found: "status \(response.status)")
            }
        case .urlMatches(let pattern):
            let regex = try compile(pattern)
            let url = response.url.absoluteString
            guard regex.firstMatch(in: url, range: NSRange(url.startIndex..., in: url)) != nil else {
                throw Mismatch(expected: "final URL matching /\(pattern)/", found: response.url.redactedForLog)
            }
        case .bodyContains(let text):
            guard response.bodyText.contains(text) else {
                throw Mismatch(expected: "body containing \"\(text)\"", found: "it does not")
            }
        case .notBodyContains(let text):
            guard !response.bodyText.contains(text) else {
                throw Mismatch(expected: "body not containing \"\(text)\"", found: "it does")
            }
        case .cookie(let name):
            guard liveCookie(named: name, url: response.url, storage: storage, now: now) != nil else {
                let expired = storage?.allCookies.contains { $0.name == name } == true
                throw Mismatch(expected: "cookie \(name) set and unexpired", found: expired ? "only an expired one" : "no such cookie")
            }
        case .header(let name, let pattern):
            let values = response.headers.values(for: name)
            guard !values.isEmpty else { throw Mismatch(expected: "a \(name) header", found: "none") }
            if let pattern {
                let regex = try compile(pattern)
                let matched = values.contains { regex.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }
                guard matched else {
                    // The value itself may be a token: the engine masks known secrets, but the value is not shown.
                    throw Mismatch(expected: "header \(name) matching /\(pattern)/", found: "\(values.count) value(s) not matching")
                }
            }
        case .json(let pointer, let equals):
            let document = try parsed.json()
            guard let value = JSONPointer.resolve(pointer, in: document) else {
                throw Mismatch(expected: "a value at JSON pointer \(pointer)", found: "nothing there")
            }
            // JSON equality: numbers by value (`1.0` equals `1`), object members in any order.
            if let equals, value != equals {
                throw Mismatch(expected: "\(pointer) = \(equals.serialized)", found: shortJSON(value))
            }
        }
    }

    // MARK: Helpers

    /// A cookie of that name, unexpired: the one the response URL would get first, else any in the store
    /// (a login may set the session for another path or a sibling host).
    static func liveCookie(named name: String, url: URL, storage: CookieStorage?, now: Date) -> Cookie? {
        guard let storage else { return nil }
        if let cookie = storage.cookies(for: url).first(where: { $0.name == name && !$0.isExpired(at: now) }) { return cookie }
        return storage.allCookies.filter { $0.name == name && !$0.isExpired(at: now) }.max { $0.created < $1.created }
    }

    static func compile(_ pattern: String) throws(Mismatch) -> NSRegularExpression {
        do { return try NSRegularExpression(pattern: pattern) } catch {
            throw Mismatch(expected: "a valid regular expression", found: "/\(pattern)/ does not compile")
        }
    }

    /// The body as HTML, or as XML when the Content-Type says XML.
    static func parse(_ response: HTTPResponse) throws(Mismatch) -> Document {
        let (charset, isXML) = mediaType(of: response.headers["Content-Type"])
        do {
            if isXML { return try Document.xml(response.body, url: response.url) }
            return try Document.html(response.body, url: response.url, encoding: charset)
        } catch {
            throw Mismatch(expected: isXML ? "an XML body" : "an HTML body", found: error.description)
        }
    }

    /// The `charset` parameter (lower case, quotes removed) of a Content-Type value, and whether it names
    /// an XML type that is not HTML.
    static func mediaType(of header: String?) -> (charset: String?, isXML: Bool) {
        if let header, let facts = asciiMediaType(of: header) { return facts }
        return unicodeMediaType(of: header)
    }

    /// ``mediaType(of:)`` for any text, by Swift's and Foundation's Unicode string rules.
    static func unicodeMediaType(of header: String?) -> (charset: String?, isXML: Bool) {
        let contentType = header?.lowercased() ?? ""
        let charset = contentType.split(separator: ";").lazy.map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("charset=") }.map { String($0.dropFirst("charset=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        return (charset, contentType.contains("xml") && !contentType.contains("html"))
    }

    /// ``mediaType(of:)`` over the bytes, for values of visible ASCII and tabs (every real Content-Type),
    /// where the Unicode rules of the general path (lower-casing, whitespace, grapheme prefixes) reduce to
    /// byte comparisons; nil for anything else. Saves Foundation's NSString bridging on every parsed body.
    static func asciiMediaType(of header: String) -> (charset: String?, isXML: Bool)? {
        var lowered: [UInt8] = []
        lowered.reserveCapacity(header.utf8.count)
        for byte in header.utf8 {
            guard byte == 0x09 || (byte >= 0x20 && byte <= 0x7E) else { return nil }
            lowered.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)
        }
        func contains(_ needle: StaticString) -> Bool {
            let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
            guard lowered.count >= pattern.count else { return false }
            for start in 0...(lowered.count - pattern.count) where lowered[start..<(start + pattern.count)].elementsEqual(pattern) {
                return true
            }
            return false
        }
        let isXML = contains("xml") && !contains("html")
        let prefix = Array("charset=".utf8)
        var partStart = 0
        while partStart <= lowered.count {
            let partEnd = lowered[partStart...].firstIndex(of: 0x3B) ?? lowered.count
            var start = partStart, end = partEnd
            while start < end, lowered[start] == 0x20 || lowered[start] == 0x09 { start += 1 }
            while end > start, lowered[end - 1] == 0x20 || lowered[end - 1] == 0x09 { end -= 1 }
            if lowered[start..<end].starts(with: prefix) {
                start += prefix.count
                while start < end, lowered[start] == 0x22 { start += 1 }
                while end > start, lowered[end - 1] == 0x22 { end -= 1 }
                return (String(decoding: lowered[start..<end], as: UTF8.self), isXML)
            }
            partStart = partEnd + 1
        }
        return (nil, isXML)
    }

    static func json(_ response: HTTPResponse) throws(Mismatch) -> JSONValue {
        do { return try JSONValue.parse(Array(response.body)) } catch {
            throw Mismatch(expected: "a JSON body", found: "invalid JSON (\(error.description))")
        }
    }

    static func shortJSON(_ value: JSONValue) -> String {
        let text = value.serialized
        return text.count > 120 ? String(text.prefix(120)) + "…" : text
    }
}
