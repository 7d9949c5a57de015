/// A schema-free JSON value (RFC 8259): response bodies, `json:` bodies, `equals:`, plugin `with` and
/// `vars`. Fixed-schema documents are `Decodable` types read through ``JSONValueDecoder``.
///
/// Numbers keep their text, so `1.10` or a 20-digit id pass through unchanged; object members keep their
/// order, so a written body looks like the file that described it.
public indirect enum JSONValue: Sendable {
    case null
    case bool(Bool)
    /// A JSON number, exactly as written (RFC 8259 section 6 syntax).
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order. A name may repeat (RFC 8259 section 4 allows it); everything that
    /// looks a name up (``subscript(_:)``, ``JSONPointer``, ``JSONValueDecoder``, equality) takes the last.
    case object([(key: String, value: JSONValue)])

    /// The value of member `key` (the last one of that name), or nil when this is not an object or has none.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The value as a variable or header value: a string as it is, anything else as its compact JSON text.
    public var plainText: String {
        if case .string(let text) = self { return text }
        return serialized
    }

    /// "a string", "an object", …: for error messages, which name a value's type but never the value.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Equality as JSON means it: numbers by their exact decimal value (`1.0 == 1`, `1e3 == 1000`, and two
/// 20-digit ids differ when one digit does), objects as unordered collections of their effective members
/// (the last of a repeated name), arrays in order, strings by Unicode scalars.
extension JSONValue: Hashable {
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b || JSONNumber(a) == JSONNumber(b)
        case (.string(let a), .string(let b)): return a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return effectiveMembers(a) == effectiveMembers(b)
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let text):
            if let number = JSONNumber(text) { hasher.combine(number) } else { hasher.combine(text) }
        case .string(let text):
            for scalar in text.unicodeScalars { hasher.combine(scalar) }
            hasher.combine(-1)
        case .array(let items): hasher.combine(items)
        case .object(let members): hasher.combine(JSONValue.effectiveMembers(members))
        }
    }

    private static func effectiveMembers(_ members: [(key: String, value: JSONValue)]) -> [String: JSONValue] {
        var effective: [String: JSONValue] = [:]
        for member in members { effective[member.key] = member.value }
        return effective
    }
}
