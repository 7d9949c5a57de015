import Foundation
import JSON

/// Checks a JSON value against the part of JSON Schema the fixtures use (type, properties, required,
/// additionalProperties, items, maxItems, enum, pattern, and the formats date-time and uri), and lists every
/// place where it does not fit.
struct SchemaCheck {
    static func problems(_ value: JSONValue, against schema: JSONValue, at path: String = "$") -> [String] {
        var problems: [String] = []
        if case .string(let type)? = schema["type"], !matches(value, type: type) {
            return ["\(path): expected \(type), found \(value.typeName)"]
        }
        if case .array(let allowed)? = schema["enum"], !allowed.contains(value) {
            problems.append("\(path): \(value.serialized) is not one of \(JSONValue.array(allowed).serialized)")
        }
        if case .string(let pattern)? = schema["pattern"], case .string(let text) = value,
           text.range(of: pattern, options: .regularExpression) == nil {
            problems.append("\(path): '\(text)' does not match \(pattern)")
        }
        if case .string(let format)? = schema["format"], case .string(let text) = value, !matches(text, format: format) {
            problems.append("\(path): '\(text)' is not a \(format)")
        }
        switch value {
        case .object(let members):
            let properties: [(key: String, value: JSONValue)]
            if case .object(let declared)? = schema["properties"] { properties = declared } else { properties = [] }
            if case .array(let required)? = schema["required"] {
                for case .string(let name) in required where !members.contains(where: { $0.key == name }) {
                    problems.append("\(path): missing required member '\(name)'")
                }
            }
            for member in members {
                if let declared = properties.last(where: { $0.key == member.key })?.value {
                    problems += Self.problems(member.value, against: declared, at: "\(path).\(member.key)")
                } else if case .bool(false)? = schema["additionalProperties"] {
                    problems.append("\(path): member '\(member.key)' is not in the documented shape")
                } else if let additional = schema["additionalProperties"], case .object = additional {
                    problems += Self.problems(member.value, against: additional, at: "\(path).\(member.key)")
                }
            }
        case .array(let items):
            if case .number(let text)? = schema["maxItems"], let limit = Int(text), items.count > limit {
                problems.append("\(path): \(items.count) items, at most \(limit)")
            }
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() {
                    problems += Self.problems(item, against: itemSchema, at: "\(path)[\(index)]")
                }
            }
        default:
            break
        }
        return problems
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null): true
        case ("number", .number): true
        case ("integer", .number(let text)): Int(text) != nil
        default: false
        }
    }

    /// RFC 3339 date-time (as OpenAPI's `date-time` means it), and an absolute URI (a scheme, then more).
    private static func matches(_ text: String, format: String) -> Bool {
        switch format {
        case "date-time":
            let pattern = #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"#
            return text.range(of: pattern, options: .regularExpression) != nil
                && (try? Date.ISO8601FormatStyle(includingFractionalSeconds: text.contains(".")).parse(text)) != nil
        case "uri":
            guard let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty else { return false }
            return text.count > scheme.count + 1
        default:
            return true
        }
    }
}
