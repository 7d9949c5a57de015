/// One problem found in a configuration file: where and what, in compiler style.
public struct ConfigDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// An error refuses the file; a warning is reported and the file is used.
    public enum Severity: String, Sendable, Hashable {
        case error, warning
    }

    /// Where the offending node starts.
    public var mark: SourceMark
    /// What is wrong (and, when one is close, what was probably meant). Never holds a secret: values
    /// are quoted only when they are structure (keys, enum spellings, names), not credentials.
    public var message: String
    public var severity: Severity

    public init(_ mark: SourceMark, _ message: String, severity: Severity = .error) {
        self.mark = mark
        self.message = message
        self.severity = severity
    }

    /// `FILE:LINE:COLUMN: error: MESSAGE` (or `warning:`).
    public var description: String { "\(mark): \(severity.rawValue): \(message)" }
}

/// A configuration that failed to load: every problem found, in file order.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// Every problem, sorted by position.
    public var diagnostics: [ConfigDiagnostic]
    /// Lines of the file that hold literal credential values: tools that echo source lines (as
    /// `check` does on a terminal) must mask these.
    public var sensitiveLines: Set<Int> = []

    public init(_ diagnostics: [ConfigDiagnostic]) {
        self.diagnostics = diagnostics
    }

    public init(_ diagnostic: ConfigDiagnostic) {
        self.diagnostics = [diagnostic]
    }

    /// One diagnostic per line.
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
