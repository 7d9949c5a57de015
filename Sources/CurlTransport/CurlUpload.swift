import Foundation
import HTTPTransport
import Locking

/// What libcurl's read callback answers.
enum CurlReadResult: Equatable {
    /// This many bytes were copied into libcurl's buffer.
    case bytes(Int)
    /// The body ended.
    case end
    /// Nothing is ready yet: the upload pauses until the source unpauses it.
    case pause
    /// The body cannot be sent as announced: the transfer fails with the source's ``CurlUpload/failure``.
    case abort
}

/// A streamed transfer's request body, as libcurl's read and seek callbacks (on the engine thread) take it.
protocol CurlUpload: Sendable {
    /// The announced length; nil sends the body chunked.
    var length: Int64? { get }
    /// Starts reading the body's source, if it needs a task for that.
    func start()
    /// Copies the next bytes into `buffer` (engine thread).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> CurlReadResult
    /// Goes back to the body's first byte, for libcurl to send it again on a new connection; false when
    /// that is impossible (engine thread).
    func rewind() -> Bool
    /// Why the body could not be sent, once ``read(into:)`` answered `.abort`.
    var failure: TransportError? { get }
    /// The transfer ended: stop reading the source.
    func close()
}

/// A body held in memory, sent without a copy (``RequestBody/data(_:)``); it can be sent again from the start.
final class MemoryUpload: CurlUpload {
    private let data: Data
    private let offset = Locked(0)

    init(_ data: Data) { self.data = data }

    var length: Int64? { Int64(data.count) }
    var failure: TransportError? { nil }

    func start() {}
    func close() {}

    func read(into buffer: UnsafeMutableRawBufferPointer) -> CurlReadResult {
        offset.withLock { offset in
            let count = min(buffer.count, data.count - offset)
            guard count > 0 else { return .end }
            data.withUnsafeBytes { bytes in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
            }
            offset += count
            return .bytes(count)
        }
    }

    func rewind() -> Bool {
        offset.withLock { $0 = 0 }
        return true
    }
}

/// A body read from an async sequence (``RequestBody/stream(length:chunks:)``) by a task of its own, at most
/// ``capacity`` chunks ahead of libcurl.
///
/// When libcurl asks for bytes and none are ready, the read callback pauses the upload
/// (`CURL_READFUNC_PAUSE`); the task unpauses it, through the engine, when it brings the next chunk, the end or
/// a failure. The task waits while ``capacity`` chunks are queued, so the sequence is read only as fast as the
/// server takes the body.
final class SequenceUpload: CurlUpload {
    /// Chunks read ahead of libcurl.
    static let capacity = 2

    private struct State {
        var queue: [Data] = []
        /// The chunk libcurl is reading and how far it got.
        var current = Data()
        var offset = 0
        /// Bytes taken from the sequence.
        var received: Int64 = 0
        /// Bytes handed to libcurl.
        var handedOut: Int64 = 0
        var finished = false
        var failure: TransportError?
        /// The read callback found nothing ready and paused the upload.
        var paused = false
        var closed = false
        var roomWaiter: UnsafeContinuation<Bool, Never>?
    }

    let length: Int64?
    private let chunks: any AsyncSequence<Data, any Error> & Sendable
    private let state = Locked(State())
    private let pump = Locked<Task<Void, Never>?>(nil)
    private let engine: CurlMultiEngine
    private let transferID: UInt64
    private let url: URL

    init(length: Int64?, chunks: any AsyncSequence<Data, any Error> & Sendable, engine: CurlMultiEngine, transferID: UInt64, url: URL) {
        self.length = length
        self.chunks = chunks
        self.engine = engine
        self.transferID = transferID
        self.url = url
    }

    var failure: TransportError? { state.withLock { $0.failure } }

    func start() {
        let task = Task { await self.pull(from: self.chunks) }
        pump.withLock { $0 = task }
    }

    func close() {
        let waiter: UnsafeContinuation<Bool, Never>? = state.withLock { state in
            state.closed = true
            state.queue.removeAll()
            state.current = Data()
            defer { state.roomWaiter = nil }
            return state.roomWaiter
        }
        waiter?.resume(returning: false)
        pump.withLock { $0 }?.cancel()
    }

    // MARK: The engine thread

    func read(into buffer: UnsafeMutableRawBufferPointer) -> CurlReadResult {
        let (result, waiter): (CurlReadResult, UnsafeContinuation<Bool, Never>?) = state.withLock { state in
            if state.closed || state.failure != nil { return (.abort, nil) }
            var waiter: UnsafeContinuation<Bool, Never>?
            if state.offset >= state.current.count, !state.queue.isEmpty {
                state.current = state.queue.removeFirst()
                state.offset = 0
                waiter = state.roomWaiter
                state.roomWaiter = nil
            }
            let count = min(buffer.count, state.current.count - state.offset)
            if count > 0 {
                let start = state.offset
                state.current.withUnsafeBytes { bytes in
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
                }
                state.offset += count
                state.handedOut += Int64(count)
                if state.offset == state.current.count {
                    state.current = Data()
                    state.offset = 0
                }
                return (.bytes(count), waiter)
            }
            if state.finished { return (.end, waiter) }
            state.paused = true
            return (.pause, waiter)
        }
        waiter?.resume(returning: true)
        return result
    }

    func rewind() -> Bool {
        state.withLock { $0.handedOut == 0 }
    }

    // MARK: The pump task

    private func pull<Chunks: AsyncSequence>(from chunks: Chunks) async where Chunks.Element == Data {
        var iterator = chunks.makeAsyncIterator()
        while await waitForRoom() {
            let chunk: Data?
            do {
                chunk = try await iterator.next()
            } catch {
                settle { state in
                    state.failure = TransportError(
                        kind: .requestBody, url: url, message: "the body's source failed (\(type(of: error)))")
                }
                return
            }
            guard let chunk else {
                settle { state in
                    state.finished = true
                    if let length, state.received != length {
                        state.failure = TransportError(
                            kind: .requestBody, url: url,
                            message: "the body ended after \(state.received) of its \(length) announced bytes")
                    }
                }
                return
            }
            guard !chunk.isEmpty else { continue }
            settle { state in
                state.received += Int64(chunk.count)
                if let length, state.received > length {
                    state.failure = TransportError(
                        kind: .requestBody, url: url, message: "the body is longer than its \(length) announced bytes")
                } else {
                    state.queue.append(chunk)
                }
            }
        }
    }

    /// Changes the state and unpauses the upload when the read callback paused it: something it can act on
    /// (a chunk, the end, a failure) has come.
    private func settle(_ change: (inout State) -> Void) {
        let unpause = state.withLock { state in
            guard !state.closed else { return false }
            change(&state)
            defer { state.paused = false }
            return state.paused
        }
        if unpause { engine.unpause(id: transferID) }
    }

    /// True once fewer than ``capacity`` chunks wait; false when the transfer ended or the body failed.
    private func waitForRoom() async -> Bool {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
            let ready: Bool? = state.withLock { state in
                if state.closed || state.failure != nil { return false }
                if state.queue.count < Self.capacity { return true }
                state.roomWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
