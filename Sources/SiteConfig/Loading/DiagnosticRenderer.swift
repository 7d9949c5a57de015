/// Formats diagnostics as compilers do: `FILE:LINE:COLUMN: error: message` (or `warning:`), optionally followed by
/// the offending source line and a caret under the column.
public struct DiagnosticRenderer: Sendable {
    /// Show the source line and caret (on a terminal).
    public var showSource: Bool
    /// How a file's path is shown (for example relative to the current directory).
    public var displayPath: @Sendable (String) -> String

    public init(showSource: Bool, displayPath: @escaping @Sendable (String) -> String = { $0 }) {
        self.showSource = showSource
        self.displayPath = displayPath
    }

    /// Shown instead of the value on a line that holds a literal credential.
    public static let redaction = "<redacted>"

    /// The lines for every diagnostic of `error`, in order. `source` is the file's text when known;
    /// lines listed in `error.sensitiveLines` are shown with their value redacted.
    public func render(_ error: ConfigError, source: String?) -> [String] {
        let lines = source.map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
        var output: [String] = []
        for diagnostic in error.diagnostics {
            let mark = diagnostic.mark
            output.append("\(displayPath(mark.file)):\(mark.line):\(mark.column): \(diagnostic.severity.rawValue): \(diagnostic.message)")
            guard showSource, let lines, mark.line >= 1, mark.line <= lines.count else { continue }
            var line = lines[mark.line - 1]
            if line.hasSuffix("\r") { line.removeLast() }
            if error.sensitiveLines.contains(mark.line) { line = Self.redacted(line) }
            // Tabs are kept so the caret lines up under them in any tab width.
            let prefix = line.prefix(max(0, mark.column - 1)).map { $0 == "\t" ? "\t" : " " }.joined()
            output.append("    " + line)
            output.append("    " + prefix + "^")
        }
        return output
    }

    /// `  password: hunter2` → `  password: <redacted>`; a line without a key is redacted whole.
    static func redacted(_ line: String) -> String {
        if let separator = line.range(of: ": ") {
            return String(line[..<separator.upperBound]) + redaction
        }
        let indentation = line.prefix { $0 == " " || $0 == "-" }
        return indentation + redaction
    }
}
