import Locking
import Logging

/// Every line a `Logger` wrote, rendered with its metadata, for tests that check what is logged (and
/// that no secret is).
public final class CapturedLog: Sendable {
    private let lines = Locked<[String]>([])

    public init() {}

    /// A logger writing here at `level` and above.
    public func logger(label: String = "test", level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: label) { _ in Handler(sink: self) }
        logger.logLevel = level
        return logger
    }

    /// The lines so far.
    public var all: [String] { lines.withLock { $0 } }

    /// The lines whose text contains `text`.
    public func lines(containing text: String) -> [String] { all.filter { $0.contains(text) } }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let sink: CapturedLog
        var logLevel: Logger.Level = .debug
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.append("\(event.level) \(event.message) \(merged.map { "\($0)=\($1)" }.sorted().joined(separator: " "))")
        }
    }
}
