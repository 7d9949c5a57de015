/// The head of an HTTP/1.1 response (RFC 9112 section 4 and 5): status and header fields.
public struct HTTPResponseHead: Sendable, Hashable {
    /// One header field as received (the name's case kept; compare with ``HTTPResponseHead/value(of:)``).
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var status: Int
    public var fields: [Field]

    /// The first field named `name` (ASCII case-insensitive, RFC 9110 section 5.1).
    public func value(of name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    /// How the body is delimited (RFC 9112 section 6.3).
    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
        case untilClose
    }

    /// Chunked wins over Content-Length; 1xx, 204 and 304 have no body; otherwise the body runs to the end
    /// of the connection. A Content-Length that is not one decimal number is a malformed answer.
    func framing() throws(HTTPResponseParseError) -> Framing {
        if (100..<200).contains(status) || status == 204 || status == 304 { return .none }
        if let coding = value(of: "transfer-encoding") {
            guard coding.lowercased().split(separator: ",").last.map(trimmedOptionalWhitespace) == "chunked" else {
                throw HTTPResponseParseError("unsupported Transfer-Encoding '\(coding)'")
            }
            return .chunked
        }
        if let length = value(of: "content-length") {
            guard !length.isEmpty, length.allSatisfy(\.isASCIIDigit), let count = Int(length) else {
                throw HTTPResponseParseError("invalid Content-Length '\(length)'")
            }
            return .length(count)
        }
        return .untilClose
    }

    /// The most bytes a response head may take: far more than any answer of the daemon.
    static let maximumSize = 64 << 10

    /// Parses the bytes before the blank line that ends the head (without that blank line): a status line
    /// `HTTP/1.x NNN reason`, then `name: value` lines; obsolete folded lines are refused.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPResponseParseError) -> HTTPResponseHead {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        guard !lines.isEmpty, let statusLine = String(validating: lines.removeFirst(), as: UTF8.self) else {
            throw HTTPResponseParseError("the status line is not text")
        }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, parts[1].allSatisfy(\.isASCIIDigit),
              let status = Int(parts[1])
        else {
            // Not quoted: whatever answered on the socket is not known to be our daemon, and its first line
            // could be anything, a cookie value included.
            throw HTTPResponseParseError("the answer does not start with an HTTP/1.x status line ('HTTP/1.1 200 OK')")
        }
        var fields: [Field] = []
        for line in lines where !line.isEmpty {
            guard let first = line.first, first != 0x20, first != 0x09 else {
                throw HTTPResponseParseError("a folded header line (obsolete since RFC 7230)")
            }
            guard let colon = line.firstIndex(of: 0x3A), colon > line.startIndex,
                  let name = String(validating: line[line.startIndex..<colon], as: UTF8.self),
                  !name.contains(where: { $0 == " " || $0 == "\t" })
            else {
                throw HTTPResponseParseError("a header line without 'name:'")
            }
            let value = trimmedOptionalWhitespace(String(decoding: line[line.index(after: colon)...], as: UTF8.self))
            fields.append(Field(name: name, value: value))
        }
        return HTTPResponseHead(status: status, fields: fields)
    }
}

/// What is wrong with a response's bytes.
public struct HTTPResponseParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Decodes a `Transfer-Encoding: chunked` body (RFC 9112 section 7.1) as its bytes arrive, in pieces of
/// any size: a state machine fed with bytes, which hands out the body's bytes.
struct ChunkedBodyDecoder {
    private enum State: Equatable {
        /// Reading a chunk-size line (hex size, optional `;extensions`).
        case sizeLine
        /// This many bytes of chunk data are still to come.
        case data(Int)
        /// The CRLF after a chunk's data.
        case dataEnd
        /// Trailer lines after the last chunk, until an empty line.
        case trailer
        case done
    }

    private var state = State.sizeLine
    private var line: [UInt8] = []
    /// A size or trailer line longer than this is refused: no honest server writes one.
    private static let maximumLineLength = 4096

    /// True once the last chunk and the trailer have been read.
    var isDone: Bool { state == .done }

    /// Consumes `input` up to the end of the body, appending the body's bytes to `body`; returns how many
    /// bytes of `input` belong to the body's framing (the rest follows the body).
    mutating func decode(_ input: ArraySlice<UInt8>, into body: inout [UInt8]) throws(HTTPResponseParseError) -> Int {
        var index = input.startIndex
        while index < input.endIndex, state != .done {
            switch state {
            case .data(let remaining):
                let take = min(remaining, input.endIndex - index)
                body.append(contentsOf: input[index..<(index + take)])
                index += take
                state = remaining - take == 0 ? .dataEnd : .data(remaining - take)
            case .sizeLine, .dataEnd, .trailer:
                let byte = input[index]
                index += 1
                guard byte == 0x0A else {
                    line.append(byte)
                    if line.count > Self.maximumLineLength { throw HTTPResponseParseError("a chunk line longer than \(Self.maximumLineLength) bytes") }
                    continue
                }
                if line.last == 0x0D { line.removeLast() }
                defer { line.removeAll(keepingCapacity: true) }
                try endLine()
            case .done:
                break
            }
        }
        return index - input.startIndex
    }

    private mutating func endLine() throws(HTTPResponseParseError) {
        switch state {
        case .sizeLine:
            let digits = line.prefix { $0 != 0x3B }.filter { $0 != 0x20 && $0 != 0x09 }
            guard !digits.isEmpty, digits.count <= 15, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                throw HTTPResponseParseError("an invalid chunk size line")
            }
            state = size == 0 ? .trailer : .data(size)
        case .dataEnd:
            guard line.isEmpty else { throw HTTPResponseParseError("chunk data longer than its size") }
            state = .sizeLine
        case .trailer:
            if line.isEmpty { state = .done }
        case .data, .done:
            break
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// `text` without the spaces and tabs around it (RFC 9110 section 5.6.3, OWS).
private func trimmedOptionalWhitespace(_ text: some StringProtocol) -> String {
    let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    return String(text.drop(while: isBlank).reversed().drop(while: isBlank).reversed())
}
