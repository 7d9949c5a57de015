import Locking
import Logging

/// Every line a ``CapturingLogHandler`` was given, for a test to read.
public final class LogLines: Sendable {
    private let lines = Locked<[String]>([])

    public init() {}

    public func append(_ line: String) { lines.withLock { $0.append(line) } }

    /// Each line as `LEVEL MESSAGE key=value …`, metadata sorted by key.
    public var all: [String] { lines.withLock { $0 } }
}

/// A swift-log handler that renders each event with its metadata into ``LogLines``, at every level.
public struct CapturingLogHandler: LogHandler {
    public let sink: LogLines
    public var logLevel: Logger.Level = .debug
    public var metadata: Logger.Metadata = [:]

    public init(sink: LogLines) {
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        sink.append("\(event.level) \(event.message) \(merged.map { "\($0)=\($1)" }.sorted().joined(separator: " "))")
    }
}
