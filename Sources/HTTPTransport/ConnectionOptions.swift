/// The options a `Connection` field value lists (RFC 9110 section 7.6.1, `Connection = #connection-option`):
/// the elements of its comma-separated list, each without the optional whitespace around it (SP and HTAB only,
/// section 5.6.3), empty elements skipped (section 5.6.1: a recipient "MUST accept empty list elements").
///
/// The one reader of the field for the socket (is `close` listed?) and the egress proxy (which fields does the
/// connection name?). Lazy, and each option is a slice of the value: the socket reads it for every request
/// that carries the field.
package struct ConnectionOptions: Sequence, IteratorProtocol {
    private let value: Substring
    private var position: String.Index

    package init(_ value: some StringProtocol) {
        self.value = Substring(value)
        position = self.value.startIndex
    }

    package mutating func next() -> Substring? {
        let bytes = value.utf8
        while position < bytes.endIndex {
            let end = bytes[position...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
            var first = position
            var last = end
            position = end == bytes.endIndex ? end : bytes.index(after: end)
            while first < last, Self.isOptionalWhitespace(bytes[first]) { first = bytes.index(after: first) }
            while last > first, Self.isOptionalWhitespace(bytes[bytes.index(before: last)]) { last = bytes.index(before: last) }
            // Commas, SP and HTAB are ASCII, so these are character boundaries of the value.
            if first < last { return value[first..<last] }
        }
        return nil
    }

    private static func isOptionalWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }
}
