import HTTPTransport

/// Collects the header lines libcurl hands to `CURLOPT_HEADERFUNCTION` and keeps the FINAL header block.
///
/// libcurl passes every block it reads: interim 1xx responses (RFC 9110 section 15.2: `100 Continue`,
/// `103 Early Hints`), a proxy's CONNECT answer, the final response, and afterwards any chunked trailers
/// (RFC 9112 section 7.1.2). Each block starts with a status line and ends with an empty line. A new status
/// line discards what came before; lines after the final block's empty line are trailers, not headers of the
/// response, and are kept apart (``trailers``).
struct ResponseHeaderParser {
    enum State: Equatable {
        /// No status line seen yet, or the last block ended: only a status line starts something.
        case betweenBlocks
        /// Inside a block: header lines belong to it until the empty line.
        case inBlock
    }

    private(set) var state: State = .betweenBlocks
    /// Fields of the current (at the end: final) block, in the order received.
    private(set) var fields: [HTTPHeaders.Field] = []
    /// The status code of the current block's status line.
    private(set) var status: Int?
    /// How many status lines were seen, interim ones included.
    private(set) var blockCount = 0
    /// The block whose empty line arrived last was a final one (not 1xx, RFC 9110 section 15.2): the response
    /// head is complete, and what follows is the body, then the trailers.
    private(set) var headComplete = false
    /// Trailer fields (RFC 9110 section 6.5): lines after the final block's empty line.
    private(set) var trailerFields: [HTTPHeaders.Field] = []

    /// Fields room is made for at each status line.
    static let expectedFieldCount = 16

    /// Feeds one header line as libcurl delivers it (with its CRLF or LF).
    mutating func consume(line bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[0..<end])

        if line.isEmpty {
            if state == .inBlock, let status, !(100...199).contains(status) { headComplete = true }
            state = .betweenBlocks
            return
        }
        if startsWithHTTPVersion(line) {
            state = .inBlock
            headComplete = false
            trailerFields.removeAll()
            fields.removeAll(keepingCapacity: true)
            // A typical response has a dozen fields: one allocation instead of five doublings.
            fields.reserveCapacity(Self.expectedFieldCount)
            status = Self.parseStatus(line)
            blockCount += 1
            return
        }
        switch state {
        case .inBlock: Self.add(line, to: &fields)
        case .betweenBlocks where headComplete: Self.add(line, to: &trailerFields)
        case .betweenBlocks: break
        }
    }

    /// Adds a field line to `list`, or continues its last field's value.
    private static func add(_ line: UnsafeRawBufferPointer, to list: inout [HTTPHeaders.Field]) {
        if line[0] == 0x20 || line[0] == 0x09 {
            // obs-fold (RFC 9112 section 5.2): a continuation of the previous field's value, joined by a space.
            guard !list.isEmpty else { return }
            let continuation = decode(trimmed(line))
            list[list.count - 1].value += (list[list.count - 1].value.isEmpty ? "" : " ") + continuation.text
            if !continuation.isUTF8 { list[list.count - 1].valueIsUTF8 = false }
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return }
        let name = decode(UnsafeRawBufferPointer(rebasing: line[0..<colon]))
        let value = decode(trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])))
        list.append(HTTPHeaders.Field(name: name.text, value: value.text, valueIsUTF8: value.isUTF8))
    }

    /// Convenience for tests and callers holding a Swift string.
    mutating func consume(line: String) {
        var copy = line
        copy.withUTF8 { consume(line: UnsafeRawBufferPointer($0)) }
    }

    var headers: HTTPHeaders { HTTPHeaders(fields) }

    var trailers: HTTPHeaders { HTTPHeaders(trailerFields) }

    private func startsWithHTTPVersion(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count >= 5 && line[0] == 0x48 && line[1] == 0x54 && line[2] == 0x54 && line[3] == 0x50 && line[4] == 0x2F
    }

    /// "HTTP/1.1 200 OK" or "HTTP/2 200": the three digits after the first space.
    private static func parseStatus(_ line: UnsafeRawBufferPointer) -> Int? {
        guard let space = line.firstIndex(of: 0x20), space + 3 < line.count else { return nil }
        var code = 0
        for index in (space + 1)...(space + 3) {
            let digit = line[index]
            guard digit >= 0x30, digit <= 0x39 else { return nil }
            code = code * 10 + Int(digit - 0x30)
        }
        return code
    }

    /// Strips optional whitespace (RFC 9110 section 5.6.3: SP and HTAB) from both ends.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// Field bytes are UTF-8 in practice; anything else is taken as ISO-8859-1 (RFC 9110 section 5.5 allows
    /// obs-text) so that no byte is lost or replaced, and says so (`isUTF8` false): the text then differs
    /// from the bytes, which the cookie jar must not store (``HTTPHeaders/Field/valueIsUTF8``).
    private static func decode(_ bytes: UnsafeRawBufferPointer) -> (text: String, isUTF8: Bool) {
        // ASCII (nearly every header) is valid UTF-8 as it is: `String(decoding:)` then gives the same string
        // without `String(validating:)`'s generic, unspecialised path (~1.5% of a login's CPU).
        let typed = bytes.assumingMemoryBound(to: UInt8.self)
        if !typed.contains(where: { $0 >= 0x80 }) { return (String(decoding: typed, as: UTF8.self), true) }
        if let utf8 = String(validating: typed, as: UTF8.self) { return (utf8, true) }
        return (String(bytes.map { Character(Unicode.Scalar($0)) }), false)
    }
}
