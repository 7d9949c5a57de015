import Daemon
import Locking
import Logging
import Testing

/// The text log lines keep StreamLogHandler's form while the logger's metadata is rendered only for lines written.
struct TextLineLogHandlerTests {
    /// What the handler wrote, line by line.
    struct CapturedLines: TextOutputStream, Sendable {
        let text = Locked("")
        mutating func write(_ string: String) { text.withLock { $0 += string } }
    }

    @Test func aLineCarriesTheLoggersMetadataAndTheCallsWithTheCallsWinning() {
        let captured = CapturedLines()
        var logger = Logger(label: "sessionkeeper.test") { TextLineLogHandler(label: $0, stream: captured) }
        logger[metadataKey: "site"] = "demo"
        logger[metadataKey: "run"] = "check"
        logger.info("outcome", metadata: ["run": "login"])
        logger.debug("below the level")
        let lines = captured.text.withLock { $0 }.split(separator: "\n")
        #expect(lines.count == 1)
        let line = String(lines.first ?? "")
        #expect(line.contains(" info sessionkeeper.test: run=login site=demo ["), "\(line)")
        #expect(line.hasSuffix("] outcome"), "\(line)")
    }

    @Test func theLevelIsTheHandlersAndALoggerWithoutMetadataWritesNone() {
        let captured = CapturedLines()
        var logger = Logger(label: "sessionkeeper.test") { TextLineLogHandler(label: $0, stream: captured) }
        logger.logLevel = .debug
        logger.debug("plain")
        let line = captured.text.withLock { $0 }
        #expect(line.contains(" debug sessionkeeper.test: [") && line.hasSuffix("] plain\n"), "\(line)")
    }
}
