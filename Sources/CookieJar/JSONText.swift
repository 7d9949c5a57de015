/// A small JSON reader and writer for the cookie formats. Unlike JSONSerialization it remembers the line of
/// every value, so an error can say where it is, and it never confuses booleans with numbers.
struct JSONNode {
    enum Value {
        case string(String), number(Double), bool(Bool), null
        case array([JSONNode])
        case object([(key: String, node: JSONNode)])
    }

    var value: Value
    /// 1-based line where the value starts.
    var line: Int

    subscript(key: String) -> JSONNode? {
        guard case .object(let members) = value else { return nil }
        return members.last { $0.key == key }?.node
    }

    var typeName: String {
        switch value {
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

struct JSONSyntaxError: Error {
    var line: Int
    var message: String
}

struct JSONReader {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1

    /// Parses a whole JSON document.
    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONNode {
        var reader = JSONReader(bytes: Array(text.utf8))
        reader.skipWhitespace()
        let node = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else { throw reader.error("unexpected text after the JSON value") }
        return node
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ message: String) -> JSONSyntaxError { JSONSyntaxError(line: line, message: message) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x0A: line += 1; index += 1
            case 0x20, 0x09, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func readValue(depth: Int) throws(JSONSyntaxError) -> JSONNode {
        guard depth < 64 else { throw error("nested too deeply") }
        guard index < bytes.count else { throw error("unexpected end of the document") }
        let startLine = line
        switch bytes[index] {
        case 0x7B:  // {
            index += 1
            var members: [(key: String, node: JSONNode)] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == 0x7D { index += 1; return JSONNode(value: .object(members), line: startLine) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == 0x22 else { throw error("expected a quoted key") }
                let key = try readString()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == 0x3A else { throw error("expected ':' after a key") }
                index += 1
                skipWhitespace()
                members.append((key, try readValue(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("unterminated object") }
                if bytes[index] == 0x2C { index += 1; continue }
                if bytes[index] == 0x7D { index += 1; return JSONNode(value: .object(members), line: startLine) }
                throw error("expected ',' or '}' in an object")
            }
        case 0x5B:  // [
            index += 1
            var elements: [JSONNode] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == 0x5D { index += 1; return JSONNode(value: .array(elements), line: startLine) }
            while true {
                skipWhitespace()
                elements.append(try readValue(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("unterminated array") }
                if bytes[index] == 0x2C { index += 1; continue }
                if bytes[index] == 0x5D { index += 1; return JSONNode(value: .array(elements), line: startLine) }
                throw error("expected ',' or ']' in an array")
            }
        case 0x22:
            return JSONNode(value: .string(try readString()), line: startLine)
        case 0x74: try expectWord("true"); return JSONNode(value: .bool(true), line: startLine)
        case 0x66: try expectWord("false"); return JSONNode(value: .bool(false), line: startLine)
        case 0x6E: try expectWord("null"); return JSONNode(value: .null, line: startLine)
        case 0x2D, 0x30...0x39:
            let start = index
            index += 1
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) || bytes[index] == 0x2E
                || bytes[index] == 0x65 || bytes[index] == 0x45 || bytes[index] == 0x2B || bytes[index] == 0x2D {
                index += 1
            }
            guard let number = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else { throw error("malformed number") }
            return JSONNode(value: .number(number), line: startLine)
        default:
            throw error("unexpected character")
        }
    }

    private mutating func expectWord(_ word: String) throws(JSONSyntaxError) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
            throw error("unexpected word (expected \(word))")
        }
        index += expected.count
    }

    private mutating func readString() throws(JSONSyntaxError) -> String {
        index += 1  // opening quote
        var result: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x22:
                return String(decoding: result, as: UTF8.self)
            case 0x5C:
                guard index < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case 0x22, 0x5C, 0x2F: result.append(escape)
                case 0x62: result.append(0x08)
                case 0x66: result.append(0x0C)
                case 0x6E: result.append(0x0A)
                case 0x72: result.append(0x0D)
                case 0x74: result.append(0x09)
                case 0x75:
                    var scalar = try readHex4()
                    if (0xD800...0xDBFF).contains(scalar), index + 1 < bytes.count, bytes[index] == 0x5C, bytes[index + 1] == 0x75 {
                        index += 2
                        let low = try readHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid surrogate pair") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    result.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw error("invalid escape")
                }
            case 0x0A:
                throw error("newline inside a string")
            default:
                result.append(byte)
            }
        }
    }

    private mutating func readHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw error("invalid \\u escape")
        }
        index += 4
        return value
    }
}

/// JSON text output helpers.
enum JSONWriter {
    static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// A number without a needless ".0" for whole values.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
