import CookieJar
import Foundation
import Logging
import SiteConfig

/// The daemon's log lines on standard error, as `log.format` says (SPEC section 2): `text` for people,
/// `json` for collectors, one object per line. Callers only ever log names, times and masked messages.
public enum LogFormat {
    /// Sets up swift-log for the whole process (once, at start).
    public static func bootstrap(_ settings: LogSettings) {
        let level = Logger.Level(rawValue: settings.level.rawValue) ?? .info
        switch settings.format {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = TextLineLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLineLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}

/// swift-log's `StreamLogHandler` lines on standard error (`time level label: key=value [source] message`),
/// with the logger's metadata rendered when a line is written rather than each time a key is set. Hummingbird
/// sets a request id on a copy of the logger for every request the socket serves, and `StreamLogHandler` renders
/// its whole metadata again at each set: work for every request, for lines that are almost never written.
public struct TextLineLogHandler: LogHandler {
    private var lines: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    /// Lines go to standard error, or to `stream` (the tests').
    public init(label: String, stream: (any TextOutputStream & Sendable)? = nil) {
        lines = stream.map { StreamLogHandler(label: label, stream: $0, metadataProvider: nil) }
            ?? StreamLogHandler.standardError(label: label)
    }

    public var logLevel: Logger.Level {
        get { lines.logLevel }
        set { lines.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        if !metadata.isEmpty { event.metadata = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) }
        lines.log(event: event)
    }
}

/// One JSON object per line on standard error: `time`, `level`, `label`, `message`, then the metadata
/// as string fields.
public struct JSONLineLogHandler: LogHandler {
    public var label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { fields[key] = "\(value)" }
        fields["time"] = CookieTime.rfc3339(Date(), fractional: true)
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(fields) else { return }
        line.append(UInt8(ascii: "\n"))
        // A log line that cannot be written (a full disk behind stderr) is dropped, never a crash.
        try? FileHandle.standardError.write(contentsOf: line)
    }
}
