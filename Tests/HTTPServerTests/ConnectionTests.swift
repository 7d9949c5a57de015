import HTTPTypes
import Locking
import NIOCore
import Testing

@testable import HTTPServer

/// What one connection keeps: keep-alive, `Connection: close`, the request deadline for trickled heads, the idle
/// timeout that does not run while an answer is made, header limits, bodies both ways, refusals at admission.
struct ConnectionTests {
    static let limits = ServerConfiguration(requestDeadline: .seconds(2), idleTimeout: .seconds(10))

    @Test func keepAliveServesRequestsInTurnOnOneConnection() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try await connection.receive(until: "GET /a")
        #expect(first.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(first.contains("Content-Length: 6\r\n"))
        #expect(!first.lowercased().contains("connection: close"))
        try await connection.send("GET /b?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.receive(until: "GET /b").hasSuffix("GET /b"))
        #expect(try await connection.isOpen)
    }

    /// RFC 9112 section 9.6: the close option in any spelling of the list ends the connection after the answer,
    /// which says so; HTTP/1.0 without keep-alive too.
    @Test(arguments: [
        "Connection: close\r\n", "Connection: Close\r\n", "Connection: keep-alive, CLOSE\r\n", "Connection: Upgrade,\tClose\r\n",
    ])
    func theCloseOptionEndsTheConnectionAfterItsAnswer(field: String) async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("GET /last HTTP/1.1\r\nHost: x\r\n\(field)\r\n")
        let answer = try await connection.receive(until: "GET /last")
        #expect(answer.contains("Connection: close\r\n"))
        #expect(try await connection.isOpen == false)
    }

    @Test func anHTTP10RequestWithoutKeepAliveIsTheLast() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("GET /old HTTP/1.0\r\n\r\n")
        #expect(try await connection.receive(until: "GET /old").contains("Connection: close\r\n"))
        #expect(try await connection.isOpen == false)
    }

    /// A head trickled a byte now and then, each within the deadline, is still cut off at the deadline: 408 and
    /// the end of the connection, with the refusal's answer.
    @Test func aTrickledHeadIsCutOffAtTheRequestDeadline() async throws {
        let cutOff = CutOffs()
        var configuration = Self.limits
        configuration.onRequestCutOff = { _ in cutOff.add() }
        let connection = try await Connection(configuration: configuration, responder: EchoPath())
        for byte in "GET /slow HTTP/1.1\r\nHo" {
            try await connection.send(String(byte))
            await connection.advance(.milliseconds(80))
        }
        #expect(try await connection.received().isEmpty)
        await connection.advance(.seconds(1))
        let answer = try await connection.received()
        #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "\(answer)")
        #expect(answer.contains("Connection: close\r\n"))
        #expect(try await connection.isOpen == false)
        #expect(cutOff.count == 1)
    }

    @Test func aRequestThatArrivesWithinTheDeadlineIsAnsweredAndTheNextOneHasItsOwn() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("GET /one HTTP/1.1\r\n")
        await connection.advance(.milliseconds(1500))
        try await connection.send("Host: x\r\n\r\n")
        #expect(try await connection.receive(until: "GET /one").hasPrefix("HTTP/1.1 200"))
        await connection.advance(.milliseconds(1000))
        try await connection.send("GET /two HTTP/1.1\r\n")
        await connection.advance(.milliseconds(1500))
        try await connection.send("Host: x\r\n\r\n")
        #expect(try await connection.receive(until: "GET /two").hasPrefix("HTTP/1.1 200"))
        #expect(try await connection.isOpen)
    }

    @Test func anIdleConnectionIsClosedAfterTheIdleTimeout() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await connection.receive(until: "GET /a")
        await connection.advance(.seconds(9))
        #expect(try await connection.isOpen)
        await connection.advance(.seconds(2))
        #expect(try await connection.isOpen == false)
    }

    /// The idle timer stops at a request's head and starts again only once its answer is written: an answer that
    /// takes longer than the idle timeout does not close its connection.
    @Test func aConnectionWaitingForItsAnswerIsNotIdle() async throws {
        let held = HeldAnswers()
        let connection = try await Connection(configuration: Self.limits, responder: held)
        try await connection.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        await connection.advance(.seconds(30))
        #expect(try await connection.isOpen)
        held.release()
        let answer = try await connection.receive(until: "late")
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        await connection.advance(.seconds(9))
        #expect(try await connection.isOpen)
        await connection.advance(.seconds(2))
        #expect(try await connection.isOpen == false)
    }

    @Test func aStreamedAnswerIsNotIdleEither() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoBody())
        try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in ["alpha", "beta"] {
            try await connection.send("\(String(part.utf8.count, radix: 16))\r\n\(part)\r\n")
            #expect(try await connection.receive(until: part).contains(part))
            await connection.advance(.seconds(15))
            #expect(try await connection.isOpen)
        }
        try await connection.send("0\r\n\r\n")
        // The chunked answer's last chunk.
        #expect(try await connection.receive(until: "0\r\n\r\n").hasSuffix("0\r\n\r\n"))
        await connection.advance(.seconds(11))
        #expect(try await connection.isOpen == false)
    }

    /// A body the answer did not read is read and dropped, so the next request on the connection is served.
    @Test func anUnreadBodyIsDroppedAndTheNextRequestServed() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        let body = String(repeating: "z", count: 100_000)
        try await connection.send("POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
        _ = try await connection.receive(until: "POST /ignore")
        try await connection.send(body)
        try await connection.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.receive(until: "GET /next").hasSuffix("GET /next"))
    }

    @Test func headFieldsOverTheLimitAreRefused() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        let big = String(repeating: "v", count: 9 * 1024)
        try await connection.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n")
        let answer = try await connection.receive(until: "\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 431"), "\(answer.prefix(40))")
        #expect(try await connection.isOpen == false)
    }

    @Test func aRefusedConnectionGetsItsAnswerAndEnds() async throws {
        let refusal = ServerResponse(status: .serviceUnavailable, headers: [.contentType: "text/plain"], body: .text("full\n"))
        let connection = try await Connection(configuration: Self.limits, refusal: refusal, responder: EchoPath())
        let answer = try await connection.receive(until: "full")
        #expect(answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"))
        #expect(answer.contains("Connection: close\r\n"))
        await connection.advance(.seconds(2))
        #expect(try await connection.isOpen == false)
    }

    /// A streamed answer whose producer ends it itself (to know the client took the end) leaves the connection
    /// to the next request.
    @Test func aStreamEndedByItsProducerKeepsTheConnection() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: SelfEndingStream())
        for path in ["/one", "/two"] {
            try await connection.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await connection.receive(until: "0\r\n\r\n").contains(path))
        }
        #expect(try await connection.isOpen)
    }

    @Test func everyAnswerSaysWhenItWasMade() async throws {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_709_210_096) == "Thu, 29 Feb 2024 12:34:56 GMT")
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.receive(until: "GET /a").contains("\r\nDate: "))
    }

    @Test func aHeadRequestGetsTheLengthButNoBody() async throws {
        let connection = try await Connection(configuration: Self.limits, responder: EchoPath())
        try await connection.send("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try await connection.receive(until: "\r\n\r\n")
        #expect(answer.contains("Content-Length: 7\r\n"))
        #expect(answer.hasSuffix("\r\n\r\n"))
    }
}

/// Counts the requests cut off at the deadline.
final class CutOffs: Sendable {
    private let value = Locked(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
