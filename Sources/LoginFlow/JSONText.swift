import Foundation
import SiteConfig

/// A strict RFC 8259 parser into SiteConfig's ``JSONValue`` (numbers keep their text, members their
/// order), used for response bodies, `expect: json` comparisons and the plugin protocol. Foundation's
/// JSONSerialization cannot tell `true` from `1` on every platform, which `equals:` must.
enum JSONText {
    /// Nesting deeper than this is refused: response bodies are untrusted input.
    static let maximumDepth = 512

    struct ParseError: Error, Sendable, CustomStringConvertible {
        var message: String
        var offset: Int
        var description: String { "\(message) at byte \(offset)" }
    }

    static func parse(_ text: String) throws(ParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    static func parse(_ bytes: [UInt8]) throws(ParseError) -> JSONValue {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw ParseError(message: "unexpected text after the JSON value", offset: parser.index) }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func fail(_ message: String) -> ParseError { ParseError(message: message, offset: index) }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard depth < JSONText.maximumDepth else { throw fail("JSON nested too deeply") }
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws(ParseError) {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("invalid JSON literal")
            }
            index += expected.count
        }

        mutating func object(depth: Int) throws(ParseError) -> JSONValue {
            index += 1
            var members: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                index += 1
                skipWhitespace()
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unterminated object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> JSONValue {
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unterminated array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func number() throws(ParseError) -> String {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            func digits(_ parser: inout Parser) -> Int {
                let from = parser.index
                while parser.index < parser.bytes.count, (0x30...0x39).contains(parser.bytes[parser.index]) { parser.index += 1 }
                return parser.index - from
            }
            guard digits(&self) > 0 else { throw fail("invalid JSON value") }
            if bytes[start] == UInt8(ascii: "0") || (bytes[start] == UInt8(ascii: "-") && bytes[start + 1] == UInt8(ascii: "0")) {
                let integerDigits = index - start - (bytes[start] == UInt8(ascii: "-") ? 1 : 0)
                guard integerDigits == 1 else { throw fail("leading zero in number") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw fail("digits expected after '.'") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail("digits expected in exponent") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws(ParseError) -> String {
            index += 1
            var runStart = index
            var output = ""
            func flush(_ parser: Parser, upTo end: Int) -> String {
                String(decoding: parser.bytes[runStart..<end], as: UTF8.self)
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    output += flush(self, upTo: index)
                    index += 1
                    return output
                }
                if byte < 0x20 { throw fail("control character in string") }
                if byte == UInt8(ascii: "\\") {
                    output += flush(self, upTo: index)
                    index += 1
                    guard index < bytes.count else { break }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): output += "\""
                    case UInt8(ascii: "\\"): output += "\\"
                    case UInt8(ascii: "/"): output += "/"
                    case UInt8(ascii: "b"): output += "\u{08}"
                    case UInt8(ascii: "f"): output += "\u{0C}"
                    case UInt8(ascii: "n"): output += "\n"
                    case UInt8(ascii: "r"): output += "\r"
                    case UInt8(ascii: "t"): output += "\t"
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800...0xDBFF).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        {
                            index += 2
                            let low = try hex4()
                            if (0xDC00...0xDFFF).contains(low) {
                                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                output.unicodeScalars.append("\u{FFFD}")
                                code = low
                            }
                        }
                        output.unicodeScalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                    default: throw fail("invalid escape in string")
                    }
                    runStart = index
                    continue
                }
                index += 1
            }
            throw fail("unterminated string")
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("truncated \\u escape") }
            var code: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("invalid \\u escape")
                }
                code = code * 16 + digit
            }
            index += 4
            return code
        }
    }
}

/// RFC 6901 JSON Pointer evaluation.
enum JSONPointer {
    /// The value at `pointer` ("" is the whole document), or nil when a step does not resolve.
    /// A pointer that does not start with "/" (and is not empty) is invalid: nil.
    static func resolve(_ pointer: String, in document: JSONValue) -> JSONValue? {
        if pointer.isEmpty { return document }
        guard pointer.hasPrefix("/") else { return nil }
        var current = document
        for rawToken in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            // RFC 6901 section 4: "~1" before "~0".
            let token = rawToken.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch current {
            case .object(let members):
                guard let member = members.last(where: { $0.key == token }) else { return nil }
                current = member.value
            case .array(let items):
                guard token == "0" || (!token.hasPrefix("0") && !token.isEmpty),
                    token.allSatisfy({ $0.isASCII && $0.isNumber }), let position = Int(token), position < items.count
                else { return nil }
                current = items[position]
            default:
                return nil
            }
        }
        return current
    }

    /// A resolved value as a variable: strings as they are, anything else as its JSON text.
    static func text(of value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return value.serialized
    }
}
