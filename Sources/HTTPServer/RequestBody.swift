import NIOCore

/// A request's body, read as it arrives: an async sequence of its parts, with backpressure (the connection reads
/// from the client only while the reader keeps up, ``HTTPConnectionHandler``). A reader that stops early (or
/// never starts) costs nothing more: once the answer is written, what is left of the body is read and dropped.
///
/// One reader, once: the parts are not kept.
public struct RequestBody: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer

    typealias Producer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyReadDemand
    >

    private let producer: Producer?

    init(producer: Producer) {
        self.producer = producer
    }

    private init() {
        producer = nil
    }

    /// The body of a request that declares none.
    public static let empty = RequestBody()

    public struct AsyncIterator: AsyncIteratorProtocol {
        var inner: Producer.AsyncIterator?

        public mutating func next() async throws -> ByteBuffer? {
            guard inner != nil else { return nil }
            return try await inner?.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(inner: producer?.makeAsyncIterator())
    }

    /// The whole body, when it is at most `limit` bytes.
    /// - Throws: ``BodyTooLarge`` past `limit`; the connection's error when it ends before the body does.
    public func collect(upTo limit: Int) async throws -> ByteBuffer {
        var collected = ByteBuffer()
        for try await part in self {
            guard collected.readableBytes + part.readableBytes <= limit else { throw BodyTooLarge(limit: limit) }
            var part = part
            collected.writeBuffer(&part)
        }
        return collected
    }
}

/// A request body longer than its reader takes (``RequestBody/collect(upTo:)``).
public struct BodyTooLarge: Error, Sendable, CustomStringConvertible {
    public let limit: Int
    public var description: String { "the request body is larger than \(limit) bytes" }
}

/// The connection ended before the request's body did: what a reader of the body gets instead of its end.
public struct RequestBodyBrokeOff: Error, Sendable, CustomStringConvertible {
    public var description: String { "the client closed the connection before the end of the request body" }
}

/// Tells the connection's handler, on its event loop, when the body's reader wants more or has gone.
struct BodyReadDemand: NIOAsyncSequenceProducerDelegate {
    let produceMoreHandler: @Sendable () -> Void
    let terminatedHandler: @Sendable () -> Void

    func produceMore() { produceMoreHandler() }
    func didTerminate() { terminatedHandler() }
}
