/// The Set-Cookie values `jar store` and `import` apply: arguments, or standard input and files (SPEC section 9).
/// Pure byte handling, in the jar's module so the fuzz target `cookie-import` reaches it.
public enum JarStoreInput {
    /// One value as given: its text, or why it cannot be one (bytes that are not UTF-8 are refused, never
    /// rewritten).
    public typealias Value = Result<String, SetCookieParseFailure>

    private static let fieldName = Array("set-cookie:".utf8)

    /// A value from the command line, a leading `Set-Cookie:` field name (any case) dropped, as a user pastes
    /// a header line.
    public static func value(fromArgument argument: String) -> String {
        String(decoding: withoutFieldName(Array(argument.utf8)[...]), as: UTF8.self)
    }

    /// The values on standard input: one a line, each with or without a `Set-Cookie:` field name; or, when the
    /// first line is an HTTP status line (`HTTP/1.1 200 OK`, as `curl -D -` writes), a response header dump
    /// whose `Set-Cookie:` lines are taken (any case, folded continuation lines joined) and every other line
    /// ignored. Blank lines are skipped; `ignored` counts the other headers left out.
    public static func values(fromInput bytes: [UInt8]) -> (values: [Value], ignored: Int) {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        lines.removeAll { $0.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
        let isHeaderDump = lines.first.map { $0.starts(with: Array("HTTP/".utf8)) } ?? false
        var taken: [ArraySlice<UInt8>] = []
        var ignored = 0
        var lastWasSetCookie = false
        for line in lines {
            guard isHeaderDump else {
                taken.append(withoutFieldName(line))
                continue
            }
            if let first = line.first, first == 0x20 || first == 0x09 {
                // RFC 9112 section 5.2: obsolete line folding continues the previous field, joined by a space.
                if lastWasSetCookie, let last = taken.popLast() {
                    taken.append(last + [0x20] + line.drop { $0 == 0x20 || $0 == 0x09 })
                }
                continue
            }
            lastWasSetCookie = hasFieldName(line)
            if lastWasSetCookie {
                taken.append(withoutFieldName(line))
            } else if !line.starts(with: Array("HTTP/".utf8)) {
                ignored += 1
            }
        }
        let values = taken.map { bytes -> Value in
            guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(.notUTF8) }
            return .success(text)
        }
        return (values, ignored)
    }

    private static func hasFieldName(_ line: ArraySlice<UInt8>) -> Bool {
        line.count >= fieldName.count && zip(line, fieldName).allSatisfy { byte, expected in
            // ASCII lower-casing: the field name is case-insensitive (RFC 9110 section 5.1).
            (byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) == expected
        }
    }

    private static func withoutFieldName(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard hasFieldName(line) else { return line }
        return line.dropFirst(fieldName.count).drop { $0 == 0x20 || $0 == 0x09 }
    }
}
