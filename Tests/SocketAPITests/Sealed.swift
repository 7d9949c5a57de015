import Testing

/// Bytes that may hold cookie values (an answer, a body): compared and searched, never printed. A failing
/// expectation shows only their length and the start of their first line up to an `=` (a status line, or a
/// cookie's name).
struct Sealed: Equatable, CustomTestStringConvertible, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private let text: String

    init(_ text: String) {
        self.text = text
    }

    var isEmpty: Bool { text.isEmpty }
    func hasPrefix(_ prefix: String) -> Bool { text.hasPrefix(prefix) }
    func hasSuffix(_ suffix: String) -> Bool { text.hasSuffix(suffix) }
    func contains(_ part: String) -> Bool { text.contains(part) }

    static func + (first: Sealed, second: Sealed) -> Sealed { Sealed(first.text + second.text) }

    var testDescription: String {
        let head = text.prefix { $0 != "\r" && $0 != "\n" && $0 != "=" }
        return "\(text.utf8.count) bytes starting \(String(head).debugDescription)"
    }

    // The same wherever it is shown: alone, in a collection, or taken apart by reflection.
    var description: String { testDescription }
    var debugDescription: String { testDescription }
    var customMirror: Mirror { Mirror(self, children: [:]) }
}
