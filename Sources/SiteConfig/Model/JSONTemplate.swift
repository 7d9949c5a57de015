import JSON

/// A JSON value whose strings may hold `{{ variables }}` (a step's `json:` body, a plugin's `with:`).
public indirect enum JSONTemplate: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A JSON number, as written.
    case number(String)
    case string(Template)
    case array([JSONTemplate])
    /// Members in file order; keys are plain text.
    case object([(key: String, value: JSONTemplate)])

    public static func == (lhs: JSONTemplate, rhs: JSONTemplate) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let text): hasher.combine(text)
        case .string(let template): hasher.combine(template)
        case .array(let items): hasher.combine(items)
        case .object(let members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }

    /// Calls `body` with every placeholder's variable name inside, in document order, repeats included.
    public func forEachVariable<Failure: Error>(_ body: (String) throws(Failure) -> Void) throws(Failure) {
        switch self {
        case .string(let template): try template.forEachVariable(body)
        case .array(let items): for item in items { try item.forEachVariable(body) }
        case .object(let members): for member in members { try member.value.forEachVariable(body) }
        case .null, .bool, .number: break
        }
    }

    /// Every variable used anywhere inside, in order of first appearance.
    public var variables: [String] { uniqueVariables { forEachVariable($0) } }

    /// Replaces every placeholder with `lookup`'s answer, giving a plain JSON value.
    public func render<Failure: Error>(_ lookup: (String) throws(Failure) -> String) throws(Failure) -> JSONValue {
        switch self {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .number(let text): return .number(text)
        case .string(let template): return .string(try template.render(lookup))
        case .array(let items):
            var rendered: [JSONValue] = []
            for item in items { rendered.append(try item.render(lookup)) }
            return .array(rendered)
        case .object(let members):
            var rendered: [(key: String, value: JSONValue)] = []
            for member in members { rendered.append((member.key, try member.value.render(lookup))) }
            return .object(rendered)
        }
    }
}
