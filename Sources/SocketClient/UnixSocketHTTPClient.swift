#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Platform

/// A minimal blocking HTTP/1.1 client over a Unix-domain socket, for the CLI's commands that talk to the
/// daemon (SPEC sections 8 and 9).
///
/// Plain sockets on the calling thread: no event loop, no thread pool and no TLS library to start, so a
/// command such as `sessionkeeper cookie` costs little more than the exchange itself (issue 15). One request
/// per connection (`Connection: close`); bodies framed by `Content-Length`, `chunked` or the end of the
/// connection; the whole exchange bounded by ``timeout`` and the body by ``responseLimit``.
public struct UnixSocketHTTPClient: Sendable {
    /// 16 MiB: the daemon's largest answer (every cookie of a site in json) fits many times over.
    public static let defaultResponseLimit = 16 << 20

    /// The socket file.
    public var socketPath: String
    /// How long connecting, sending and receiving the whole answer may take together.
    public var timeout: Duration
    /// The most body bytes accepted.
    public var responseLimit: Int
    /// Whose server is believed: checked on every connection before a byte is sent.
    public var trust: ServerTrust

    public init(
        socketPath: String, timeout: Duration = .seconds(30), responseLimit: Int = defaultResponseLimit, trust: ServerTrust = ServerTrust()
    ) {
        self.socketPath = socketPath
        self.timeout = timeout
        self.responseLimit = responseLimit
        self.trust = trust
    }

    /// Sends one request and reads the whole answer.
    /// - Parameters:
    ///   - target: the path and query, such as `/v1/sites/demo/cookies?format=json`.
    ///   - headers: extra request header fields (`Host`, `Connection` and `Content-Length` are set here).
    public func send(
        _ method: String, _ target: String, headers: [HTTPResponseHead.Field] = [], body: [UInt8] = []
    ) throws(UnixSocketHTTPError) -> UnixSocketHTTPResponse {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let connection = try SocketConnection(path: socketPath, timeout: timeout, trust: trust)
        defer { connection.close() }
        try connection.write(Self.requestBytes(method, target, headers: headers, body: body), deadline: deadline)
        let head = try connection.readHead(deadline: deadline)
        let framing: HTTPResponseHead.Framing
        do throws(HTTPResponseParseError) { framing = try head.framing() } catch { throw .malformedResponse(socket: socketPath, reason: error.reason) }
        let body = try connection.readBody(framing: method == "HEAD" ? .none : framing, limit: responseLimit, deadline: deadline)
        return UnixSocketHTTPResponse(head: head, body: body)
    }

    /// Opens `GET target` as a Server-Sent Events stream (`text/event-stream`). The answer's head must come
    /// within ``timeout``; the events then come as the server sends them, with no time limit. An answer
    /// other than 200 is read whole and returned as ``EventStreamOpening/refused(_:)``.
    public func openEventStream(_ target: String) throws(UnixSocketHTTPError) -> EventStreamOpening {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let connection = try SocketConnection(path: socketPath, timeout: timeout, trust: trust)
        do throws(UnixSocketHTTPError) {
            try connection.write(
                Self.requestBytes("GET", target, headers: [.init(name: "Accept", value: "text/event-stream")], body: []),
                deadline: deadline)
            let head = try connection.readHead(deadline: deadline)
            let framing: HTTPResponseHead.Framing
            do throws(HTTPResponseParseError) { framing = try head.framing() } catch { throw UnixSocketHTTPError.malformedResponse(socket: socketPath, reason: error.reason) }
            guard head.status == 200 else {
                let body = try connection.readBody(framing: framing, limit: responseLimit, deadline: deadline)
                connection.close()
                return .refused(UnixSocketHTTPResponse(head: head, body: body))
            }
            return .opened(ServerSentEventStream(connection: connection, framing: framing))
        } catch {
            connection.close()
            throw error
        }
    }

    static func requestBytes(_ method: String, _ target: String, headers: [HTTPResponseHead.Field], body: [UInt8]) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}

/// A whole answer.
public struct UnixSocketHTTPResponse: Sendable, Hashable {
    public var head: HTTPResponseHead
    public var body: [UInt8]

    public var status: Int { head.status }

    public init(head: HTTPResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }
}

/// What asking for an event stream gave.
public enum EventStreamOpening: Sendable {
    /// The server answered 200: read events from the stream.
    case opened(ServerSentEventStream)
    /// It answered something else (an error body).
    case refused(UnixSocketHTTPResponse)
}

/// Why an exchange over the socket failed. Names the socket; never holds a body.
public enum UnixSocketHTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing listens there: no such file (ENOENT, ENOTDIR), a file nobody listens on (ECONNREFUSED), not a
    /// socket (ENOTSOCK), no permission to it (EACCES), or a path too long for a socket address.
    case notReachable(socket: String, errno: Int32)
    /// The whole exchange took longer than the client's timeout.
    case timedOut(socket: String, after: Duration)
    /// The answer is not HTTP/1.1 as this client reads it, or the connection ended in the middle of it.
    case malformedResponse(socket: String, reason: String)
    /// The body is larger than the client's limit.
    case responseTooLarge(socket: String, limit: Int)
    /// Another system error while sending or receiving.
    case failed(SystemError)
    /// The process listening at the socket runs as a user the client does not believe (``ServerTrust``);
    /// `reason` names the uid found. Nothing was sent.
    case untrustedServer(socket: String, uid: UInt32, reason: String)

    public var description: String {
        switch self {
        case let .notReachable(socket, code):
            let reason: String
            switch code {
            case ENOENT: reason = "no such socket"
            case ECONNREFUSED: reason = "nothing listens on it"
            case EACCES, EPERM: reason = "permission denied"
            case ENOTSOCK: reason = "it is not a socket"
            case ENAMETOOLONG: reason = "the path is too long for a Unix socket (at most 107 bytes)"
            case ENOTDIR: reason = "a part of the path is not a folder"
            default: reason = SystemError(call: "connect", errno: code).reason
            }
            return "cannot connect to \(socket): \(reason)"
        case let .timedOut(socket, after):
            return "\(socket) did not answer within \(after)"
        case let .malformedResponse(socket, reason):
            return "the answer on \(socket) is not valid HTTP: \(reason)"
        case let .responseTooLarge(socket, limit):
            return "the answer on \(socket) is larger than \(BoundedRead.describe(bytes: limit))"
        case let .failed(error):
            return error.description
        case let .untrustedServer(_, _, reason):
            return reason
        }
    }
}

/// One connected socket and the bytes read from it but not used yet.
final class SocketConnection {
    let path: String
    /// The client's timeout, named when it runs out.
    let timeout: Duration
    private let fd: Int32
    private var isClosed = false
    /// Bytes received and not consumed yet.
    private(set) var pending: [UInt8] = []
    private var readChunk = [UInt8](repeating: 0, count: 64 << 10)

    /// Connects to `path` and checks whose server listens there (``ServerTrust``) before anything is sent.
    init(path: String, timeout: Duration, trust: ServerTrust) throws(UnixSocketHTTPError) {
        self.path = path
        self.timeout = timeout
        do throws(SystemError) {
            fd = try Syscall.connectUnixSocket(path, sendTimeout: timeout)
        } catch {
            switch error.errno {
            case ENOENT, ENOTDIR, ECONNREFUSED, ENOTSOCK, EACCES, EPERM, ENAMETOOLONG:
                throw .notReachable(socket: path, errno: error.errno)
            case EAGAIN, EINPROGRESS:
                throw .timedOut(socket: path, after: timeout)
            default:
                throw .failed(error)
            }
        }
        // The descriptor is closed by deinit when this throws.
        let server: PeerCredentials
        do throws(SystemError) {
            server = try PeerCredentials(socket: fd)
        } catch {
            throw .failed(error)
        }
        let owner = (try? Syscall.stat(path))?.ownerUID
        if let reason = trust.refusal(serverUID: server.uid, socketOwner: owner, socket: path) {
            throw .untrustedServer(socket: path, uid: server.uid, reason: reason)
        }
    }

    /// The descriptor, for a shutdown from another thread.
    var descriptor: Int32 { fd }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Syscall.close(fd)
    }

    deinit { close() }

    func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(UnixSocketHTTPError) {
        do throws(SystemError) {
            try Syscall.sendAll(fd, bytes, path: path)
        } catch {
            if error.errno == EAGAIN || error.errno == EWOULDBLOCK { throw .timedOut(socket: path, after: timeout) }
            // The daemon closed the connection at once (it refused the peer, or stopped): what it said, if
            // anything, is still to be read.
            if error.errno == EPIPE || error.errno == ECONNRESET { return }
            throw .failed(error)
        }
    }

    /// Reads more bytes into ``pending``; false at the end of the stream. Without a deadline it waits as
    /// long as the server keeps the connection open.
    func fill(deadline: ContinuousClock.Instant?) throws(UnixSocketHTTPError) -> Bool {
        if let deadline {
            let ready: Bool
            do throws(SystemError) {
                ready = try Syscall.waitReadable(fd, timeout: max(ContinuousClock.now.duration(to: deadline), .zero), path: path)
            } catch {
                throw .failed(error)
            }
            guard ready else { throw .timedOut(socket: path, after: timeout) }
        }
        let count: Int
        do throws(SystemError) {
            count = try Syscall.readSome(fd, into: &readChunk, path: path)
        } catch {
            // A reset after the answer began is a connection that ended early.
            if error.errno == ECONNRESET { return false }
            throw .failed(error)
        }
        if count == 0 { return false }
        pending.append(contentsOf: readChunk[0..<count])
        return true
    }

    func consume(_ count: Int) { pending.removeFirst(min(count, pending.count)) }

    /// Reads up to the blank line that ends the head and parses it.
    func readHead(deadline: ContinuousClock.Instant) throws(UnixSocketHTTPError) -> HTTPResponseHead {
        var searchFrom = 0
        while true {
            if let end = Self.endOfHead(in: pending, from: searchFrom) {
                let head: HTTPResponseHead
                do throws(HTTPResponseParseError) { head = try HTTPResponseHead.parse(pending[0..<end.headEnd]) } catch {
                    throw .malformedResponse(socket: path, reason: error.reason)
                }
                consume(end.bodyStart)
                // An interim answer (100 Continue) is followed by the real one.
                if (100..<200).contains(head.status) { return try readHead(deadline: deadline) }
                return head
            }
            searchFrom = max(0, pending.count - 3)
            guard pending.count <= HTTPResponseHead.maximumSize else {
                throw .malformedResponse(socket: path, reason: "the header is larger than \(HTTPResponseHead.maximumSize >> 10) KiB")
            }
            guard try fill(deadline: deadline) else {
                throw .malformedResponse(socket: path, reason: pending.isEmpty ? "the connection closed without an answer" : "the connection closed in the header")
            }
        }
    }

    /// Where the head ends: `\r\n\r\n` (or bare `\n\n`, as lenient clients accept).
    private static func endOfHead(in bytes: [UInt8], from start: Int) -> (headEnd: Int, bodyStart: Int)? {
        var index = start
        while index < bytes.count {
            if bytes[index] == 0x0A {
                if index + 1 < bytes.count, bytes[index + 1] == 0x0A { return (index, index + 2) }
                if index + 2 < bytes.count, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    /// Reads the whole body as `framing` says, at most `limit` bytes.
    func readBody(framing: HTTPResponseHead.Framing, limit: Int, deadline: ContinuousClock.Instant) throws(UnixSocketHTTPError) -> [UInt8] {
        switch framing {
        case .none:
            return []
        case .length(let length):
            guard length <= limit else { throw .responseTooLarge(socket: path, limit: limit) }
            while pending.count < length {
                guard try fill(deadline: deadline) else {
                    throw .malformedResponse(socket: path, reason: "the connection closed after \(pending.count) of \(length) body bytes")
                }
            }
            let body = Array(pending[0..<length])
            consume(length)
            return body
        case .untilClose:
            while try fill(deadline: deadline) {
                guard pending.count <= limit else { throw .responseTooLarge(socket: path, limit: limit) }
            }
            defer { pending.removeAll() }
            return pending
        case .chunked:
            var decoder = ChunkedBodyDecoder()
            var body: [UInt8] = []
            while true {
                let used: Int
                do throws(HTTPResponseParseError) { used = try decoder.decode(pending[...], into: &body) } catch {
                    throw .malformedResponse(socket: path, reason: error.reason)
                }
                consume(used)
                guard body.count <= limit else { throw .responseTooLarge(socket: path, limit: limit) }
                if decoder.isDone { return body }
                guard try fill(deadline: deadline) else {
                    throw .malformedResponse(socket: path, reason: "the connection closed in the middle of a chunked body")
                }
            }
        }
    }

}
