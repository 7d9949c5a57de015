/// A position in a YAML file: where a value, a step or a problem is.
///
/// Lines and columns count from 1, as compilers and editors show them.
public struct SourceMark: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The file's path as it was given to the loader (absolute when the loader resolved it).
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column, counted in Unicode scalars.
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `FILE:LINE:COLUMN`, the prefix of every diagnostic.
    public var description: String { "\(file):\(line):\(column)" }

    public static func < (lhs: SourceMark, rhs: SourceMark) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
    }
}
