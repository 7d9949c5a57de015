/// An ordered list of header fields. Names compare case-insensitively (RFC 9110 section 5.1);
/// order and repetition are kept because `Set-Cookie` may appear many times and its order matters
/// (RFC 6265 section 5.3: later cookies replace earlier ones).
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field as received or to be sent.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String
        /// False when the bytes received were not UTF-8: `value` then holds them decoded as ISO-8859-1
        /// (RFC 9110 section 5.5, obs-text), one character a byte, so that nothing is lost, but the text is
        /// not what the server meant. A consumer that must keep bytes exact (the cookie jar, RFC 6265bis)
        /// refuses such a field rather than store other bytes.
        public var valueIsUTF8: Bool
        public init(name: String, value: String, valueIsUTF8: Bool = true) {
            self.name = name
            self.value = value
            self.valueIsUTF8 = valueIsUTF8
        }
    }

    public private(set) var fields: [Field]

    public init(_ fields: [Field] = []) { self.fields = fields }

    public init(_ pairs: [(String, String)]) { self.fields = pairs.map { Field(name: $0.0, value: $0.1) } }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    public var isEmpty: Bool { fields.isEmpty }
    public var count: Int { fields.count }

    /// The first value of the named field, or nil.
    public subscript(name: String) -> String? { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }

    /// Every value of the named field, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Every field of that name, in order.
    public func fields(named name: String) -> [Field] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }
    }

    public func contains(_ name: String) -> Bool { fields.contains { $0.name.caseInsensitiveEquals(name) } }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    /// Appends a field as it is (with its ``Field/valueIsUTF8`` mark).
    public mutating func add(_ field: Field) { fields.append(field) }

    /// Replaces every field of that name with one field holding `value`, at the first one's position.
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
            fields[first].value = value
            // Later duplicates are rare: look for one before rebuilding the array.
            let after = fields.index(after: first)
            if fields[after...].contains(where: { $0.name.caseInsensitiveEquals(name) }) {
                fields = fields.enumerated().filter { $0.offset == first || !$0.element.name.caseInsensitiveEquals(name) }
                    .map(\.element)
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Makes room for `count` fields in all, so that adding them allocates once.
    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Removes every field of that name.
    public mutating func remove(name: String) { fields.removeAll { $0.name.caseInsensitiveEquals(name) } }
}

// Concrete for String and Substring, not one generic on StringProtocol: a generic `package` function is called
// unspecialized from other modules (through witness tables, per byte), and every header lookup comes here.
extension String {
    /// ASCII case-insensitive comparison, the one HTTP field names and connection options use.
    package func caseInsensitiveEquals(_ other: String) -> Bool { asciiCaseInsensitiveEqual(utf8, other.utf8) }
}

extension Substring {
    /// ASCII case-insensitive comparison, the one HTTP field names and connection options use.
    package func caseInsensitiveEquals(_ other: String) -> Bool { asciiCaseInsensitiveEqual(utf8, other.utf8) }
}

@inline(__always) private func asciiCaseInsensitiveEqual(_ left: some Collection<UInt8>, _ right: String.UTF8View) -> Bool {
    guard left.count == right.count else { return false }
    return zip(left, right).allSatisfy { asciiLower($0) == asciiLower($1) }
}

@inline(__always) private func asciiLower(_ byte: UInt8) -> UInt8 {
    (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
}
