import Locking
import Platform
import Synchronization

/// One Server-Sent Event (WHATWG HTML, "Server-sent events", the event stream format).
public struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` field; "message" when the server sent none.
    public var event: String
    /// The `data:` lines joined by line feeds.
    public var data: String
    /// The last `id:` seen on the stream, if any.
    public var id: String?

    public init(event: String, data: String, id: String?) {
        self.event = event
        self.data = data
        self.id = id
    }
}

/// Turns an event stream's bytes, in pieces of any size, into events: lines end in LF or CRLF, a blank
/// line dispatches, `:` starts a comment, a field's value loses one leading space.
struct ServerSentEventParser {
    /// A line or an event's data longer than this is refused: the daemon's events are a few hundred bytes.
    static let maximumEventSize = 1 << 20

    private var line: [UInt8] = []
    private var eventType = ""
    private var data: [String] = []
    private var dataSize = 0
    private var lastID: String?

    /// The events completed by `bytes`.
    mutating func feed(_ bytes: some Collection<UInt8>) throws(HTTPResponseParseError) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            guard byte == 0x0A else {
                line.append(byte)
                if line.count > Self.maximumEventSize { throw HTTPResponseParseError("an event line longer than 1 MiB") }
                continue
            }
            if line.last == 0x0D { line.removeLast() }
            if let event = try take(String(decoding: line, as: UTF8.self)) { events.append(event) }
            line.removeAll(keepingCapacity: true)
        }
        return events
    }

    private mutating func take(_ text: String) throws(HTTPResponseParseError) -> ServerSentEvent? {
        if text.isEmpty {
            defer {
                eventType = ""
                data = []
                dataSize = 0
            }
            guard !data.isEmpty else { return nil }
            return ServerSentEvent(event: eventType.isEmpty ? "message" : eventType, data: data.joined(separator: "\n"), id: lastID)
        }
        if text.hasPrefix(":") { return nil }
        let name: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            name = text[...]
            value = ""
        }
        switch name {
        case "event": eventType = String(value)
        case "data":
            dataSize += value.utf8.count + 1
            if dataSize > Self.maximumEventSize { throw HTTPResponseParseError("an event's data is larger than 1 MiB") }
            data.append(String(value))
        case "id" where !value.contains("\0"): lastID = String(value)
        default: break
        }
        return nil
    }
}

/// The events of an open `text/event-stream` answer (``UnixSocketHTTPClient/openEventStream(_:)``).
///
/// ``next()`` blocks its thread until an event arrives or the stream ends; ``close()``, from any thread,
/// ends the stream so that a blocked ``next()`` returns nil.
public final class ServerSentEventStream: Sendable {
    private struct Reading {
        var connection: SocketConnection
        var chunked: ChunkedBodyDecoder?
        var parser = ServerSentEventParser()
        var ready: [ServerSentEvent] = []
        var ended = false
    }

    private let reading: Locked<Reading>
    private let descriptor: Int32
    private let closed = Atomic<Bool>(false)

    init(connection: sending SocketConnection, framing: HTTPResponseHead.Framing) {
        descriptor = connection.descriptor
        reading = Locked(Reading(connection: connection, chunked: framing == .chunked ? ChunkedBodyDecoder() : nil))
    }

    /// The next event, waiting as long as it takes; nil once the server ended the stream or ``close()``
    /// was called.
    public func next() throws(UnixSocketHTTPError) -> ServerSentEvent? {
        try reading.withLock { state throws(UnixSocketHTTPError) -> ServerSentEvent? in
            while state.ready.isEmpty {
                if state.ended || closed.load(ordering: .acquiring) { return nil }
                let path = state.connection.path
                if !state.connection.pending.isEmpty {
                    var body: [UInt8] = []
                    if var chunked = state.chunked {
                        let used: Int
                        do throws(HTTPResponseParseError) { used = try chunked.decode(state.connection.pending[...], into: &body) } catch {
                            throw .malformedResponse(socket: path, reason: error.reason)
                        }
                        state.chunked = chunked
                        state.connection.consume(used)
                        if chunked.isDone { state.ended = true }
                    } else {
                        body = state.connection.pending
                        state.connection.consume(body.count)
                    }
                    do throws(HTTPResponseParseError) { state.ready += try state.parser.feed(body) } catch {
                        throw .malformedResponse(socket: path, reason: error.reason)
                    }
                    continue
                }
                if try !state.connection.fill(deadline: nil) { state.ended = true }
            }
            return state.ready.removeFirst()
        }
    }

    /// Ends the stream: a ``next()`` blocked in another thread returns nil.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Syscall.shutdownSocket(descriptor)
    }
}
