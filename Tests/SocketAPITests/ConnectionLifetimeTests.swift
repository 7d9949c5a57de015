import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
@testable import SocketAPI
import Testing

/// ``ConnectionLifetime``: when a socket connection ends, on an embedded event loop whose clock the test moves.
@Suite struct ConnectionLifetimeTests {
    private struct Connection {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let ledger = ConnectionLedger()

        init(idleTimeout: TimeAmount = .seconds(10)) throws {
            channel = EmbeddedChannel(loop: loop)
            try channel.pipeline.syncOperations.addHandler(ConnectionLifetime(ledger: ledger, idleTimeout: idleTimeout))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        var isOpen: Bool { channel.isActive }

        func readHead() throws {
            try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/health")))
        }

        func readEnd() throws { try channel.writeInbound(HTTPRequestPart.end(nil)) }

        func answer() throws {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
    }

    @Test func anIdleConnectionClosesAfterTheTimeoutCountedFromItsLastActivity() throws {
        let connection = try Connection()
        connection.loop.advanceTime(by: .seconds(6))
        // An answer a fast path sent (noted in the ledger) is activity.
        connection.ledger.lastActivity = connection.loop.now
        connection.loop.advanceTime(by: .seconds(6))
        #expect(connection.isOpen)
        connection.loop.advanceTime(by: .seconds(5))
        #expect(!connection.isOpen)
    }

    @Test func aRequestTheRouterIsAnsweringKeepsTheConnectionHoweverLong() throws {
        let connection = try Connection()
        try connection.readHead()
        try connection.readEnd()
        #expect(connection.ledger.routedInFlight == 1)
        connection.loop.advanceTime(by: .seconds(60))
        #expect(connection.isOpen)
        try connection.answer()
        #expect(connection.ledger.routedInFlight == 0)
        connection.loop.advanceTime(by: .seconds(9))
        #expect(connection.isOpen)
        connection.loop.advanceTime(by: .seconds(2))
        #expect(!connection.isOpen)
    }

    @Test func aRequestStillBeingReadCountsOnlyWhileItsPartsArrive() throws {
        let connection = try Connection()
        try connection.readHead()
        connection.loop.advanceTime(by: .seconds(8))
        try connection.channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "a")))
        connection.loop.advanceTime(by: .seconds(8))
        #expect(connection.isOpen)
        // No part for the whole timeout: the client is trickling, and the connection ends.
        connection.loop.advanceTime(by: .seconds(3))
        #expect(!connection.isOpen)
    }

    @Test func gracefulShutdownClosesAtOnceWhenNoAnswerIsOwedElseAfterIt() throws {
        let idle = try Connection()
        idle.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        idle.loop.run()
        #expect(!idle.isOpen)

        let busy = try Connection()
        try busy.readHead()
        try busy.readEnd()
        busy.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        busy.loop.run()
        #expect(busy.isOpen)
        try busy.answer()
        busy.loop.run()
        #expect(!busy.isOpen)
    }
}
