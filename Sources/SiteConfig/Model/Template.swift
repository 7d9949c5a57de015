/// The names `visit` reports, in order of first appearance, each once: every `variables` list of the
/// model is its type's `forEachVariable` without repeats.
func uniqueVariables(_ visit: ((String) -> Void) -> Void) -> [String] {
    var seen = Set<String>()
    var names: [String] = []
    visit { name in if seen.insert(name).inserted { names.append(name) } }
    return names
}

/// A string with `{{ name }}` placeholders, parsed once when the configuration loads.
///
/// Variable names are dotted words: an extracted variable (`csrf`), `credentials.NAME`,
/// `site.base_url`, or `env.NAME` for names listed under a site's `allow_env:` (SPEC section 3).
/// Text outside placeholders is kept byte for byte; there is no escaping syntax because a literal
/// `{{` has no use in an HTTP request description.
public struct Template: Sendable, Hashable, CustomStringConvertible {
    /// One piece of a template.
    public enum Segment: Sendable, Hashable {
        /// Text copied as is.
        case literal(String)
        /// A placeholder, by variable name (whitespace inside the braces trimmed).
        case variable(String)
    }

    /// The text as written in the file.
    public let source: String
    /// The parsed pieces, in order.
    public let segments: [Segment]

    /// Parses `text`, failing on an unclosed `{{`, an empty placeholder or a name that is not a
    /// dotted word (`[A-Za-z_][A-Za-z0-9_-]*` separated by dots).
    public init(parsing text: String) throws(TemplateError) {
        // Scans UTF-8 bytes: `{` and `}` are ASCII, so every cut falls on a scalar boundary.
        let bytes = Array(text.utf8)
        var segments: [Segment] = []
        var literalStart = 0
        var index = 0
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else {
                index += 1
                continue
            }
            let open = index
            var close = open + 2
            while close + 1 < bytes.count, !(bytes[close] == UInt8(ascii: "}") && bytes[close + 1] == UInt8(ascii: "}")) {
                close += 1
            }
            let characterOffset = String(decoding: bytes[0..<open], as: UTF8.self).count
            guard close + 1 < bytes.count else {
                throw TemplateError(message: "unclosed '{{' (a placeholder is written {{ name }})", offset: characterOffset)
            }
            let name = String(decoding: bytes[(open + 2)..<close], as: UTF8.self).trimmingSpaces()
            guard Template.isValidVariableName(name) else {
                let shown = name.isEmpty ? "empty placeholder '{{ }}'" : "invalid variable name '\(name)'"
                throw TemplateError(
                    message: "\(shown) (names are words separated by dots, such as csrf or credentials.password)",
                    offset: characterOffset)
            }
            if open > literalStart {
                segments.append(.literal(String(decoding: bytes[literalStart..<open], as: UTF8.self)))
            }
            segments.append(.variable(name))
            index = close + 2
            literalStart = index
        }
        if literalStart < bytes.count {
            segments.append(.literal(String(decoding: bytes[literalStart...], as: UTF8.self)))
        }
        self.source = text
        self.segments = segments
    }

    /// A template without placeholders whose text is `text` exactly (even if it contains `{{`).
    public init(literal text: String) {
        self.source = text
        self.segments = text.isEmpty ? [] : [.literal(text)]
    }

    /// Calls `body` with each placeholder's variable name, in order, repeats included; allocates nothing.
    public func forEachVariable<Failure: Error>(_ body: (String) throws(Failure) -> Void) throws(Failure) {
        for case .variable(let name) in segments { try body(name) }
    }

    /// The variable names used, in order of first appearance, each once.
    public var variables: [String] { uniqueVariables { forEachVariable($0) } }

    /// True when the template has no placeholder.
    public var isLiteral: Bool { variables.isEmpty }

    /// Builds the final string, asking `lookup` for each placeholder's value.
    public func render<Failure: Error>(_ lookup: (String) throws(Failure) -> String) throws(Failure) -> String {
        var output = ""
        for segment in segments {
            switch segment {
            case .literal(let text): output += text
            case .variable(let name): output += try lookup(name)
            }
        }
        return output
    }

    /// The source text (never a rendered value, so it is safe to log).
    public var description: String { source }

    /// Whether `name` is a dotted word such as `csrf`, `credentials.password` or `env.HOME`.
    public static func isValidVariableName(_ name: some StringProtocol) -> Bool {
        guard !name.isEmpty else { return false }
        for part in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard let first = part.unicodeScalars.first, first == "_" || first.properties.isAlphabetic && first.isASCII
            else { return false }
            for scalar in part.unicodeScalars.dropFirst() {
                let ok = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || scalar == "_" || scalar == "-")
                if !ok { return false }
            }
        }
        return true
    }
}

/// A template that cannot be parsed.
public struct TemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// Offset, in Characters from the template's start, of the offending `{{`.
    public var offset: Int

    public init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    /// The message.
    public var description: String { message }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}

/// A name and a template value, kept in file order (form fields, query items, headers, plugin env).
public struct NamedTemplate: Sendable, Hashable {
    /// The field, query item, header or variable name.
    public var name: String
    /// Its value, with placeholders.
    public var value: Template
    /// Where the entry's key is written.
    public var mark: SourceMark?

    public init(name: String, value: Template, mark: SourceMark? = nil) {
        self.name = name
        self.value = value
        self.mark = mark
    }
}
