/// JSON Pointer (RFC 6901): `/user/name`, `/items/0`; `~1` stands for `/` and `~0` for `~` in a name.
public enum JSONPointer {
    /// The value at `pointer` in `document` ("" is the whole document), or nil when the pointer is not
    /// valid (it must be empty or start with "/") or a step does not resolve. An array index must be `0` or
    /// a number without leading zeros (section 4); `-` (past the end) never resolves when reading.
    public static func resolve(_ pointer: String, in document: JSONValue) -> JSONValue? {
        guard let tokens = tokens(of: pointer) else { return nil }
        var current = document
        for token in tokens {
            switch current {
            case .object:
                guard let member = current[token] else { return nil }
                current = member
            case .array(let items):
                guard let position = arrayIndex(token), position < items.count else { return nil }
                current = items[position]
            default:
                return nil
            }
        }
        return current
    }

    /// The reference tokens of `pointer`, unescaped, or nil when it is neither empty nor starts with "/".
    public static func tokens(of pointer: String) -> [String]? {
        if pointer.isEmpty { return [] }
        guard pointer.utf8.first == UInt8(ascii: "/") else { return nil }
        return pointer.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(unescape)
    }

    /// Section 4: "~1" is "/" and "~0" is "~", decoded left to right so "~01" is "~1". A "~" before anything
    /// else is not an escape and stays.
    private static func unescape(_ token: Substring.UTF8View.SubSequence) -> String {
        guard token.contains(UInt8(ascii: "~")) else { return String(decoding: token, as: UTF8.self) }
        var bytes: [UInt8] = []
        var index = token.startIndex
        while index < token.endIndex {
            let next = token.index(after: index)
            if token[index] == UInt8(ascii: "~"), next < token.endIndex, token[next] == UInt8(ascii: "0") || token[next] == UInt8(ascii: "1") {
                bytes.append(token[next] == UInt8(ascii: "0") ? UInt8(ascii: "~") : UInt8(ascii: "/"))
                index = token.index(after: next)
            } else {
                bytes.append(token[index])
                index = next
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The pointer that names `path` (each name escaped).
    public static func pointer(for path: [JSONPathComponent]) -> String {
        path.map { component in
            switch component {
            case .key(let name): "/" + name.replacing("~", with: "~0").replacing("/", with: "~1")
            case .index(let position): "/\(position)"
            }
        }.joined()
    }

    /// Section 4's `array-index`: "0", or digits without a leading zero.
    private static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.allSatisfy({ (0x30...0x39).contains($0) }), first != 0x30 || utf8.count == 1 else {
            return nil
        }
        return Int(token)
    }
}
