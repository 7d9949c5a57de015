import Foundation
import HTTPTransport
import Locking

/// A streamed transfer's body between libcurl's write callback (the engine thread) and the one task reading
/// it (``ResponseBody``), with backpressure.
///
/// At most ``capacity`` parts wait here. When the write callback brings one more, the stream refuses it
/// and the callback returns `CURL_WRITEFUNC_PAUSE`: libcurl keeps that part, stops reading the socket (so
/// the server's sends fill the kernel's buffers and then wait) and delivers the part again when the
/// transfer is unpaused. The reader unpauses it, through the engine, as soon as it takes a part from a
/// paused stream. A slow reader of a 1 GiB body thus holds ``capacity`` parts and libcurl's one.
final class CurlResponseStream: ResponseBodySource, Sendable {
    /// Parts waiting for the reader before the transfer pauses. libcurl hands over at most its receive
    /// buffer at a time (16 KiB by default), so this is at most 128 KiB.
    static let capacity = 8

    private struct State {
        var parts: [Data] = []
        var parked: UnsafeContinuation<Result<Data?, TransportError>, Never>?
        /// The write callback refused a part: the transfer is paused until the reader takes one.
        var paused = false
        /// How the body ended; parts that arrived before it are read first.
        var end: Result<HTTPHeaders, TransportError>?
        /// The reader took the successful end: the trailers are its to see.
        var endRead = false
    }

    private let state = Locked(State())
    private let engine: CurlMultiEngine
    private let transferID: UInt64
    private let url: URL

    init(engine: CurlMultiEngine, transferID: UInt64, url: URL) {
        self.engine = engine
        self.transferID = transferID
        self.url = url
    }

    // MARK: The engine thread

    /// Takes a part of the body from the write callback; false when the stream is full and the transfer
    /// must pause (the part is then delivered again later).
    func offer(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let part = Data(bytes)
        let (accepted, reader): (Bool, UnsafeContinuation<Result<Data?, TransportError>, Never>?) = state.withLock { state in
            // An ended stream (the reader cancelled it) drops what still arrives until the abort takes effect.
            if state.end != nil { return (true, nil) }
            if let parked = state.parked {
                state.parked = nil
                return (true, parked)
            }
            guard state.parts.count < Self.capacity else {
                state.paused = true
                return (false, nil)
            }
            state.parts.append(part)
            return (true, nil)
        }
        reader?.resume(returning: .success(part))
        return accepted
    }

    /// The transfer ended: successfully with the trailers, or with an error. The first end counts.
    func finish(_ end: Result<HTTPHeaders, TransportError>) {
        let reader: UnsafeContinuation<Result<Data?, TransportError>, Never>? = state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = end
            defer { state.parked = nil }
            if state.parked != nil, case .success = end { state.endRead = true }
            return state.parked
        }
        reader?.resume(returning: end.map { _ in nil })
    }

    // MARK: The reader

    func next() async throws(TransportError) -> Data? {
        enum Step {
            case part(Data, unpause: Bool)
            case ended(Result<HTTPHeaders, TransportError>)
            case wait
        }
        let step: Step = state.withLock { state in
            if !state.parts.isEmpty {
                let part = state.parts.removeFirst()
                defer { state.paused = false }
                return .part(part, unpause: state.paused)
            }
            if let end = state.end {
                if case .success = end { state.endRead = true }
                return .ended(end)
            }
            return .wait
        }
        switch step {
        case .part(let part, let unpause):
            if unpause { engine.unpause(id: transferID) }
            return part
        case .ended(let end):
            return try end.map { _ in nil }.get()
        case .wait:
            return try await parkUntilNextPart().get()
        }
    }

    /// Waits for the next part or the end. Cancelling the waiting task aborts the transfer.
    private func parkUntilNextPart() async -> Result<Data?, TransportError> {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Data?, TransportError>, Never>) in
                let ready: Result<Data?, TransportError>? = state.withLock { state in
                    // Anything that came between the first look and now is taken at once. Nothing is paused
                    // here: a pause needs a full stream.
                    if !state.parts.isEmpty { return .success(state.parts.removeFirst()) }
                    if let end = state.end {
                        if case .success = end { state.endRead = true }
                        return end.map { _ in nil }
                    }
                    state.parked = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    var trailers: HTTPHeaders {
        state.withLock { state in
            guard state.endRead, case .success(let trailers)? = state.end else { return HTTPHeaders() }
            return trailers
        }
    }

    func cancel() {
        let (ended, reader): (Bool, UnsafeContinuation<Result<Data?, TransportError>, Never>?) = state.withLock { state in
            guard state.end == nil else { return (false, nil) }
            state.end = .failure(CurlMultiEngine.cancelledError(url))
            state.parts.removeAll()
            defer { state.parked = nil }
            return (true, state.parked)
        }
        guard ended else { return }
        reader?.resume(returning: .failure(CurlMultiEngine.cancelledError(url)))
        engine.cancel(id: transferID)
    }
}
