/// JSON text that is not one valid RFC 8259 value. The message says what is wrong, never quotes the text
/// (a cookie file or a response body may hold secrets).
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    /// 0-based byte offset into the UTF-8 text where the problem was found.
    public var offset: Int
    /// 1-based line of ``offset``.
    public var line: Int

    public init(message: String, offset: Int, line: Int) {
        self.message = message
        self.offset = offset
        self.line = line
    }

    public var description: String { "\(message) at line \(line) (byte \(offset))" }
}

/// One step from a value to a value inside it: a member name or an array position.
public enum JSONPathComponent: Sendable, Hashable {
    case key(String)
    case index(Int)
}

extension JSONValue {
    /// Nesting deeper than this is refused: response bodies and plugin output are untrusted, and the parser
    /// and decoder recurse once per level.
    public static let maximumDepth = 512

    /// Parses one JSON value (RFC 8259) surrounded by optional whitespace.
    ///
    /// Strict where the RFC says MUST: no comments, no trailing commas, no leading zeros, no unescaped
    /// control characters in strings, nothing after the value. Choices where the RFC leaves them open:
    /// - a repeated member name is kept (``object(_:)`` holds every member); lookups take the last;
    /// - a `\u` escape of a lone surrogate (section 8.2) is an error: a Swift string cannot hold one, and
    ///   replacing it would silently change a cookie value or a token;
    /// - bytes that are not UTF-8 inside a string become U+FFFD (callers that must keep bytes exactly take
    ///   text that is already a `String`);
    /// - a leading UTF-8 byte order mark is skipped (section 8.1 allows ignoring it).
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses one JSON value from UTF-8 bytes; see ``parse(_:)-(String)``.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        return try parser.document()
    }

    /// The byte offset of the value at `path`, or of the deepest value on the way that exists (so a
    /// missing member points at its object). For error messages after decoding: parsing does not keep
    /// offsets, so this reads the text again. Nil when the text is not JSON.
    static func offset(of path: [JSONPathComponent], in bytes: [UInt8]) -> Int? {
        var parser = JSONParser(bytes: bytes, locating: path)
        guard (try? parser.document()) != nil else { return nil }
        return parser.located
    }

    /// The 1-based line that holds byte `offset` of `bytes`.
    static func line(ofOffset offset: Int, in bytes: [UInt8]) -> Int {
        bytes.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
    }
}

/// A recursive-descent reader over UTF-8 bytes, depth-bounded.
struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    /// Set when looking for one value's offset: the path wanted and the path to the value being read.
    private let target: [JSONPathComponent]?
    private var path: [JSONPathComponent] = []
    private(set) var located: Int?

    init(bytes: [UInt8], locating target: [JSONPathComponent]? = nil) {
        self.bytes = bytes
        self.target = target
    }

    mutating func document() throws(JSONSyntaxError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let result = try value(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return result
    }

    private func fail(_ message: String, at offset: Int? = nil) -> JSONSyntaxError {
        let position = offset ?? index
        return JSONSyntaxError(message: message, offset: position, line: JSONValue.line(ofOffset: position, in: bytes))
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw fail("nested deeper than \(JSONValue.maximumDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of the text (a value was expected)") }
        if let target, path.count <= target.count, target.starts(with: path) { located = index }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), 0x30...0x39: return .number(try number())
        default: throw fail("expected a value")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw fail("expected a value (true, false and null are the only words)")
        }
        index += expected.count
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a quoted member name") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after a member name") }
            index += 1
            skipWhitespace()
            if target != nil { path.append(.key(key)) }
            members.append((key, try value(depth: depth + 1)))
            if target != nil { path.removeLast() }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated object (expected ',' or '}')") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw fail("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            if target != nil { path.append(.index(items.count)) }
            items.append(try value(depth: depth + 1))
            if target != nil { path.removeLast() }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated array (expected ',' or ']')") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(items)
            default: throw fail("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func number() throws(JSONSyntaxError) -> String {
        switch JSONNumber.scan(bytes, from: index) {
        case .success(let end):
            defer { index = end }
            return String(decoding: bytes[index..<end], as: UTF8.self)
        case .failure(let failure):
            throw fail(failure.message, at: failure.offset)
        }
    }

    /// Reads a string literal; `index` is at its opening quote. Runs without escapes are copied as they are.
    private mutating func string() throws(JSONSyntaxError) -> String {
        let opening = index
        index += 1
        var runStart = index
        var output: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                defer { index += 1 }
                if output.isEmpty { return String(decoding: bytes[runStart..<index], as: UTF8.self) }
                output.append(contentsOf: bytes[runStart..<index])
                return String(decoding: output, as: UTF8.self)
            case UInt8(ascii: "\\"):
                output.append(contentsOf: bytes[runStart..<index])
                try escape(into: &output)
                runStart = index
            case 0x00..<0x20:
                throw fail("a control character in a string must be escaped")
            default:
                index += 1
            }
        }
        throw fail("unterminated string", at: opening)
    }

    /// Reads one escape sequence (RFC 8259 section 7); `index` is at the backslash.
    private mutating func escape(into output: inout [UInt8]) throws(JSONSyntaxError) {
        let start = index
        index += 1
        guard index < bytes.count else { throw fail("unterminated string", at: start) }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(letter)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var code = try hex4()
            if (0xDC00...0xDFFF).contains(code) { throw fail("a \\u escape is a lone low surrogate", at: start) }
            if (0xD800...0xDBFF).contains(code) {
                // Outside the Basic Multilingual Plane: a high surrogate must be followed by a low one.
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("a \\u escape is a lone high surrogate", at: start)
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("a \\u escape is a lone high surrogate", at: start) }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            }
            // Every non-surrogate code point up to 0x10FFFF is a scalar; the checks above leave no other.
            guard let scalar = Unicode.Scalar(code) else { throw fail("a \\u escape names no character", at: start) }
            UTF8.encode(scalar) { output.append($0) }
        default:
            throw fail("invalid escape in a string", at: start)
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        // Errors point at the escape's backslash, two bytes back.
        guard bytes.count - index >= 4 else { throw fail("a \\u escape needs four hex digits", at: index - 2) }
        var code: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: throw fail("a \\u escape needs four hex digits", at: index - 2)
            }
            code = code << 4 | UInt32(digit)
        }
        index += 4
        return code
    }
}
