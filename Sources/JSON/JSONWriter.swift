/// Writes JSON text: the one string escaping of the project (RFC 8259 section 7) and number formatting.
///
/// Escaped: `"` and `\`, and every control character: U+0000 to U+001F (section 7 requires it) with the
/// short forms `\b \f \n \r \t` where they exist and `\u00XX` otherwise, and U+007F DELETE as `\u007f`
/// (allowed, not required: it keeps written files free of invisible bytes, as the cookie files always
/// were). Not escaped: `/` (escaping it only matters inside an HTML `<script>`, which no output here is)
/// and everything outside ASCII, written as UTF-8.
public enum JSONWriter {
    /// How much whitespace a written value gets.
    public enum Layout: Sendable {
        /// No whitespace at all: `{"a":[1,2]}`. Request bodies, plugin input.
        case compact
        /// On one line, with a space after `:` and `,`: `{"a": [1, 2]}`. One cookie a line in the cookie files.
        case spaced
    }

    /// `value` as JSON text, members in their order.
    public static func write(_ value: JSONValue, layout: Layout = .compact) -> String {
        var output = ""
        write(value, layout: layout, to: &output)
        return output
    }

    /// Appends `value` as JSON text to `output`.
    public static func write(_ value: JSONValue, layout: Layout = .compact, to output: inout String) {
        let separator = layout == .compact ? "," : ", "
        let colon = layout == .compact ? ":" : ": "
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let text): output += text
        case .string(let text): writeString(text, to: &output)
        case .array(let items):
            output += "["
            for (position, item) in items.enumerated() {
                if position > 0 { output += separator }
                write(item, layout: layout, to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (position, member) in members.enumerated() {
                if position > 0 { output += separator }
                writeString(member.key, to: &output)
                output += colon
                write(member.value, layout: layout, to: &output)
            }
            output += "}"
        }
    }

    /// `text` as a quoted JSON string.
    public static func string(_ text: String) -> String {
        var output = ""
        writeString(text, to: &output)
        return output
    }

    /// Appends `text` as a quoted JSON string to `output`.
    public static func writeString(_ text: String, to output: inout String) {
        output.unicodeScalars.append("\"")
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{00}"..."\u{1F}", "\u{7F}":
                let hex = Array("0123456789abcdef".unicodeScalars)
                output += "\\u00"
                output.unicodeScalars.append(hex[Int(scalar.value >> 4)])
                output.unicodeScalars.append(hex[Int(scalar.value & 0xF)])
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output.unicodeScalars.append("\"")
    }

    /// The JSON number text of `value`: whole values below 10^15 without a fraction (`1700000000`, not
    /// `1.7e+09` or `1700000000.0`), others in Swift's shortest round-tripping form. JSON has no infinity
    /// or NaN: they are written as `null`.
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

extension JSONValue {
    /// Compact JSON text (``JSONWriter/Layout/compact``), members in their order.
    public var serialized: String { JSONWriter.write(self) }
}
