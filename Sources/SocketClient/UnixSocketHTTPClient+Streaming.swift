import Platform

/// A request body that ``UnixSocketHTTPClient/stream(_:_:headers:body:onHead:onBody:)`` sends as it reads it.
public enum StreamedRequestBody {
    /// No body (`Content-Length: 0` for POST, PUT and PATCH).
    case none
    /// A body in memory.
    case bytes([UInt8])
    /// A body read part by part until `read` gives an empty part: with `length`, sent with that
    /// `Content-Length` (and it must give exactly that many bytes); without, chunked.
    case reader(length: Int?, read: () throws -> [UInt8])
}

extension UnixSocketHTTPClient {
    /// Sends one request whose body is read as it goes, and hands the answer's body to `onBody` part by part as
    /// it arrives: neither body is ever held whole. The head must come within ``timeout`` of the request's last
    /// byte; the body may take as long as it keeps coming, each silence at most ``timeout``.
    ///
    /// - Parameters:
    ///   - headers: request header fields (`Host`, `Connection` and the body's framing are set here).
    ///   - onHead: called with the answer's head before any of its body.
    ///   - onBody: called with each part of the body, decoded from its framing.
    /// - Returns: the answer's head.
    /// - Throws: ``UnixSocketHTTPError``, or what `body`'s reader, `onHead` or `onBody` throw.
    @discardableResult
    public func stream(
        _ method: String, _ target: String, headers: [HTTPResponseHead.Field], body: StreamedRequestBody,
        onHead: (HTTPResponseHead) throws -> Void, onBody: ([UInt8]) throws -> Void
    ) throws -> HTTPResponseHead {
        let connection = try SocketConnection(path: socketPath, timeout: timeout, trust: trust)
        defer { connection.close() }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        let silence = { ContinuousClock.now.advanced(by: timeout) }
        switch body {
        case .none:
            if ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: 0\r\n" }
            try connection.write(Array((head + "\r\n").utf8), deadline: silence())
        case .bytes(let bytes):
            head += "Content-Length: \(bytes.count)\r\n\r\n"
            try connection.write(Array(head.utf8) + bytes, deadline: silence())
        case .reader(let length, let read):
            head += length.map { "Content-Length: \($0)\r\n\r\n" } ?? "Transfer-Encoding: chunked\r\n\r\n"
            try connection.write(Array(head.utf8), deadline: silence())
            while true {
                let part = try read()
                if part.isEmpty { break }
                if length == nil {
                    try connection.write(Array((String(part.count, radix: 16) + "\r\n").utf8) + part + [0x0D, 0x0A], deadline: silence())
                } else {
                    try connection.write(part, deadline: silence())
                }
            }
            if length == nil { try connection.write(Array("0\r\n\r\n".utf8), deadline: silence()) }
        }
        let answer = try connection.readHead(deadline: silence())
        try onHead(answer)
        let framing: HTTPResponseHead.Framing
        do throws(HTTPResponseParseError) { framing = try answer.framing() } catch {
            throw UnixSocketHTTPError.malformedResponse(socket: socketPath, reason: error.reason)
        }
        try connection.streamBody(framing: method == "HEAD" ? .none : framing, silence: timeout, to: onBody)
        return answer
    }
}

extension SocketConnection {
    /// Hands the body to `sink` as it arrives, in parts of at most what one read brings.
    func streamBody(framing: HTTPResponseHead.Framing, silence: Duration, to sink: ([UInt8]) throws -> Void) throws {
        let deadline = { ContinuousClock.now.advanced(by: silence) }
        switch framing {
        case .none:
            return
        case .length(var left):
            while left > 0 {
                if pending.isEmpty {
                    guard try fill(deadline: deadline()) else {
                        throw UnixSocketHTTPError.malformedResponse(socket: path, reason: "the connection closed with \(left) body bytes to come")
                    }
                }
                let take = min(left, pending.count)
                try sink(Array(pending[0..<take]))
                consume(take)
                left -= take
            }
        case .untilClose:
            while true {
                if !pending.isEmpty {
                    try sink(pending)
                    consume(pending.count)
                }
                guard try fill(deadline: deadline()) else { return }
            }
        case .chunked:
            var decoder = ChunkedBodyDecoder()
            while true {
                var part: [UInt8] = []
                let used: Int
                do throws(HTTPResponseParseError) { used = try decoder.decode(pending[...], into: &part) } catch {
                    throw UnixSocketHTTPError.malformedResponse(socket: path, reason: error.reason)
                }
                consume(used)
                if !part.isEmpty { try sink(part) }
                if decoder.isDone { return }
                guard try fill(deadline: deadline()) else {
                    throw UnixSocketHTTPError.malformedResponse(socket: path, reason: "the connection closed in the middle of a chunked body")
                }
            }
        }
    }
}
