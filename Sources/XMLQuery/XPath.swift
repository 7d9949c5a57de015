internal import CXML2

/// XPath 1.0 as libxml2 implements it.
public enum XPath {
    /// Checks an expression without a document: nil when it compiles and evaluates against an empty document
    /// (which also catches unknown functions and unbound variables), else libxml2's message.
    public static func validate(_ expression: String) -> String? {
        if expression.trimmingCharacters(in: .whitespaces).isEmpty { return "empty XPath expression" }
        do {
            let probe = try Document.xml(Array("<probe/>".utf8))
            _ = try probe.evaluate(expression)
            return nil
        } catch {
            return error.message
        }
    }
}

/// The result of evaluating an XPath expression: a node set (each node's string value, in document order)
/// or one of XPath's scalar types.
public enum XPathValue: Sendable, Hashable {
    case nodes([String])
    case string(String)
    case number(Double)
    case boolean(Bool)

    /// Every value as text: each node's string value, or the scalar converted as XPath's `string()` does.
    public var strings: [String] {
        switch self {
        case .nodes(let values): values
        case .string(let value): [value]
        case .number(let value): [Self.format(value)]
        case .boolean(let value): [value ? "true" : "false"]
        }
    }

    /// The first value as text, or nil for an empty node set.
    public var first: String? { strings.first }

    /// XPath 1.0 section 4.2 number-to-string: integers without a fraction, NaN and Infinity spelled out.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
