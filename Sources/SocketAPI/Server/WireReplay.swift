import Foundation
import NIOCore

/// Sends the bytes of the last answer ``CookieFastPath`` made on this connection again, without the HTTP decoder
/// and encoder, when the same request comes again byte for byte and the answer still holds
/// (``AnswerValidity``). Everything else goes on to the decoder unchanged.
///
/// A client that asks for a site's cookies in a loop sends the same bytes each time. The decoder, the
/// conversion to HTTP types, the fast path's checks and the encoder cost more than the answer; here the
/// request is a comparison of bytes, and the answer one buffer written.
///
/// Why a byte-identical request gets the same answer: this handler forwards each request head alone, so it
/// knows where every request starts. It keeps an answer only for a head that (1) is made of CRLF-ended lines
/// whose first empty line is its end, so any HTTP/1.1 parser reads exactly this one head from exactly these
/// bytes (RFC 9112 section 2.2); (2) the HTTP handlers read as one request with no body (``ConnectionLedger``);
/// (3) ``CookieFastPath`` answered itself, synchronously, while the head passed through (the router answers
/// in a task, never within the read). The same bytes at the next request boundary would then be read the same
/// way and answered the same way, as long as the answer holds and the router owes no earlier answer.
///
/// When it cannot tell where the next request starts (a body, a head of another shape, a head longer than
/// the decoder allows), it forwards everything from then on; the connection is served as before, by the HTTP
/// handlers.
final class WireReplay: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private struct Kept {
        /// The request head, with its final empty line.
        var head: ByteBuffer
        /// The answer as the encoder wrote it.
        var answer: ByteBuffer
        var validity: AnswerValidity
    }

    private static let getPrefix: [UInt8] = Array("GET ".utf8)

    private let parts: CookieFastPathParts
    private let ledger: ConnectionLedger
    /// The most bytes of an incomplete head held back; with more, the decoder gets them and applies its limits.
    private let maxHeadBytes: Int
    /// Set once the start of the next request is no longer known: everything goes to the decoder.
    private var passingThrough = false
    /// The start of a head not complete yet, and how far it has been read.
    private var held: ByteBuffer?
    private var scanner = HeadScanner()
    private var kept: Kept?
    /// What the encoder writes while a head this handler forwarded passes through the HTTP handlers.
    private var capture: ByteBuffer?
    private var captureFailed = false
    private var unflushed = false
    /// Bytes read while the connection could take no more output, not looked at yet.
    private var waiting: ByteBuffer?
    /// A read was asked for while bytes were waiting: it is passed on once they are handled.
    private var readDeferred = false
    /// Answers sent from kept bytes on this connection.
    private(set) var replayed = 0

    init(parts: CookieFastPathParts, ledger: ConnectionLedger, maxHeadBytes: Int) {
        self.parts = parts
        self.ledger = ledger
        self.maxHeadBytes = maxHeadBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        // A client that sends requests and does not read the answers would have them pile up in memory: while
        // the connection takes no more output, what it sends waits here and nothing more is read (below).
        if var earlier = waiting {
            earlier.writeBuffer(&input)
            waiting = earlier
            return
        }
        handle(input, context: context)
    }

    /// Stops reading while bytes wait for the connection to take output again (NIO reads only when a read is
    /// asked for, and the async channel behind asks for each).
    func read(context: ChannelHandlerContext) {
        if waiting != nil {
            readDeferred = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let rest = waiting {
            waiting = nil
            handle(rest, context: context)
            flushAnswers(context: context)
            if waiting == nil, readDeferred {
                readDeferred = false
                context.read()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    private func handle(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        var input = bytes
        if var earlier = held {
            held = nil
            earlier.writeBuffer(&input)
            input = earlier
        }
        while input.readableBytes > 0 {
            guard context.channel.isWritable else {
                // The rest waits whole; the scanner reads a partly read head again from its start.
                scanner = HeadScanner()
                waiting = input
                return
            }
            if passingThrough {
                context.fireChannelRead(wrapInboundOut(input))
                return
            }
            let length: Int
            if let kept, Self.bytes(of: input, startWith: kept.head) {
                // Whatever the scanner read of this head (it came in pieces) is read again from the next one.
                scanner = HeadScanner()
                if replay(kept, context: context) {
                    input.moveReaderIndex(forwardBy: kept.head.readableBytes)
                    continue
                }
                length = kept.head.readableBytes
            } else {
                switch input.withUnsafeReadableBytes({ scanner.scan($0) }) {
                case .end(let end):
                    length = end
                case .incomplete where input.readableBytes <= maxHeadBytes && Self.mayBeGet(input):
                    held = input
                    return
                case .incomplete, .malformed:
                    passThrough(input, context: context)
                    return
                }
            }
            scanner = HeadScanner()
            guard forward(input.readSlice(length: length)!, context: context) else {
                passThrough(input, context: context)
                return
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushAnswers(context: context)
        context.fireChannelReadComplete()
    }

    /// Sends what the replayed answers wrote, once per batch of reads.
    private func flushAnswers(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if capture != nil {
            switch unwrapOutboundIn(data) {
            case .byteBuffer(var bytes): capture!.writeBuffer(&bytes)
            case .fileRegion: captureFailed = true
            }
        }
        context.write(data, promise: promise)
    }

    /// Sends the kept answer when it still holds and no earlier answer is owed.
    private func replay(_ kept: Kept, context: ChannelHandlerContext) -> Bool {
        guard ledger.routedInFlight == 0 else { return false }
        let now = parts.now()
        guard kept.validity.holds(on: parts.keeper.board, now: now, second: Int(Date().timeIntervalSince1970)) else { return false }
        context.write(wrapOutboundOut(.byteBuffer(kept.answer)), promise: nil)
        unflushed = true
        replayed += 1
        parts.counted()
        ledger.lastActivity = context.eventLoop.now
        return true
    }

    /// Hands `head` to the HTTP handlers, and keeps the answer ``CookieFastPath`` gave to it. False when the
    /// next request's start is no longer known.
    private func forward(_ head: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        let headsBefore = ledger.headsSeen
        capture = context.channel.allocator.buffer(capacity: 512)
        captureFailed = false
        context.fireChannelRead(wrapInboundOut(head))
        let answer = capture
        capture = nil
        guard ledger.headsSeen == headsBefore + 1, let outcome = ledger.lastHead, outcome.bodiless else { return false }
        if let validity = outcome.answer, let answer, answer.readableBytes > 0, !captureFailed {
            kept = Kept(head: head, answer: answer, validity: validity)
        }
        return true
    }

    private func passThrough(_ rest: ByteBuffer, context: ChannelHandlerContext) {
        passingThrough = true
        kept = nil
        if rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
    }

    private static func bytes(of buffer: ByteBuffer, startWith prefix: ByteBuffer) -> Bool {
        buffer.getSlice(at: buffer.readerIndex, length: prefix.readableBytes) == prefix
    }

    /// Whether `bytes` may be the start of a GET (its first bytes are those of `GET `).
    private static func mayBeGet(_ bytes: ByteBuffer) -> Bool {
        bytes.withUnsafeReadableBytes { raw in raw.starts(with: getPrefix.prefix(raw.count)) }
    }
}

/// Finds the end of a request head made only of lines ended by CRLF, across reads: it goes on from where the
/// last call stopped, so a head that arrives a byte at a time is read once, not once per byte.
struct HeadScanner {
    enum Result: Equatable {
        /// The head ends after this many bytes, its empty line included.
        case end(Int)
        /// No empty line yet; every line so far ends with CRLF.
        case incomplete
        /// A CR without LF, an LF without CR, or an empty first line: not a head this handler keeps.
        case malformed
    }

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")

    /// Bytes read so far, from the head's first byte.
    private var scanned = 0
    /// Bytes of the current line before its CR.
    private var lineLength = 0
    private var afterCR = false

    /// Reads on from where the last call stopped; `bytes` starts at the head's first byte each time.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Result {
        while scanned < bytes.count {
            let byte = bytes[scanned]
            scanned += 1
            if afterCR {
                guard byte == Self.lf else { return .malformed }
                afterCR = false
                if lineLength == 0 { return scanned == 2 ? .malformed : .end(scanned) }
                lineLength = 0
            } else if byte == Self.cr {
                afterCR = true
            } else if byte == Self.lf {
                return .malformed
            } else {
                lineLength += 1
            }
        }
        return .incomplete
    }
}
