/// A fixed-schema document that does not match its type, or text that is not JSON. The reason names the
/// place and the expected and found types, never a value.
public struct JSONDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The text is not JSON (``JSONSyntaxError``).
        case syntax
        /// A member is missing or null where a value is required.
        case missing
        /// A value has the wrong type, or a number does not fit the type.
        case wrongType
        /// The type's own check refused the value (`DecodingError.dataCorrupted`).
        case invalid
    }

    public var kind: Kind
    /// Where in the document: empty for the whole document.
    public var path: [JSONPathComponent]
    /// What is wrong: "is missing", "must be a string, found a number", or the type's or parser's message.
    public var reason: String
    /// Byte offset and 1-based line of the value at ``path`` (or of the nearest value that exists on the
    /// way, for a missing member), when decoded from text.
    public var offset: Int?
    public var line: Int?

    public init(kind: Kind, path: [JSONPathComponent], reason: String, offset: Int? = nil, line: Int? = nil) {
        self.kind = kind
        self.path = path
        self.reason = reason
        self.offset = offset
        self.line = line
    }

    /// The last member name on ``path``, for messages such as `"secure" must be true or false`.
    public var key: String? {
        for component in path.reversed() { if case .key(let name) = component { return name } }
        return nil
    }

    /// `/unlock/salt is missing (line 3)`, `invalid JSON: unterminated string (line 2)`.
    public var description: String {
        let place = kind == .syntax ? "invalid JSON:" : (path.isEmpty ? "the document" : JSONPointer.pointer(for: path))
        return "\(place) \(reason)" + (line.map { " (line \($0))" } ?? "")
    }
}

/// Decodes `Decodable` types from ``JSONValue``s (or from JSON text through ``JSONValue/parse(_:)-(String)``),
/// so fixed-schema documents use Codable with the project's one parser: numbers are read from their exact
/// text, a `JSONValue` member stays as it was written (order, number text), booleans are never numbers,
/// and errors say where and what without quoting values.
///
/// Keys map to member names as written (no case conversion); a repeated member name means its last
/// value; unknown members are ignored. `Date` and `Data` decode through their own `Decodable`
/// conformances (a number of seconds since 2001, an array of bytes): schemas here decode text and convert.
public struct JSONValueDecoder: Sendable {
    /// Context for `init(from:)` implementations, as `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable]

    public init(userInfo: [CodingUserInfoKey: any Sendable] = [:]) {
        self.userInfo = userInfo
    }

    /// Decodes `type` from a parsed value.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(JSONDecodingError) -> T {
        do {
            return try ValueDecoder(value: value, codingPath: [], context: userInfo).decodeValue(T.self)
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw JSONDecodingError(kind: .invalid, path: [], reason: "\(error)")
        }
    }

    /// Parses `bytes` and decodes `type` from them; errors carry the line of the value they concern.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(JSONDecodingError) -> T {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw JSONDecodingError(kind: .syntax, path: [], reason: error.message, offset: error.offset, line: error.line)
        }
        do {
            return try decode(type, from: value)
        } catch {
            var located = error
            if let offset = JSONValue.offset(of: error.path, in: bytes) {
                located.offset = offset
                located.line = JSONValue.line(ofOffset: offset, in: bytes)
            }
            throw located
        }
    }

    /// Parses `text` and decodes `type` from it; see ``decode(_:from:)-([UInt8])``.
    public func decode<T: Decodable>(_ type: T.Type, from text: String) throws(JSONDecodingError) -> T {
        try decode(type, from: Array(text.utf8))
    }

    private static func describe(_ error: DecodingError) -> JSONDecodingError {
        switch error {
        case .keyNotFound(let key, let context):
            return JSONDecodingError(kind: .missing, path: path(context.codingPath + [key]), reason: "is missing")
        case .valueNotFound(_, let context):
            return JSONDecodingError(kind: .missing, path: path(context.codingPath), reason: "is missing")
        case .typeMismatch(_, let context):
            return JSONDecodingError(kind: .wrongType, path: path(context.codingPath), reason: context.debugDescription)
        case .dataCorrupted(let context):
            return JSONDecodingError(kind: .invalid, path: path(context.codingPath), reason: context.debugDescription)
        @unknown default:
            return JSONDecodingError(kind: .invalid, path: [], reason: "\(error)")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> [JSONPathComponent] {
        codingPath.map { key in
            if let position = key as? PositionKey { return .index(position.position) }
            return .key(key.stringValue)
        }
    }
}

/// An array position in a coding path.
private struct PositionKey: CodingKey {
    var position: Int
    init(_ position: Int) { self.position = position }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { position = intValue }
    var stringValue: String { String(position) }
    var intValue: Int? { position }
}

/// What a type expects, in the words of the error messages.
private func expectation<T>(_ type: T.Type) -> String {
    switch type {
    case is Bool.Type: "true or false"
    case is String.Type: "a string"
    case is Double.Type, is Float.Type: "a number"
    case is any FixedWidthInteger.Type: "a whole number"
    default: "a value of another type"
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let context: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { context }

    /// The decoder of a value inside this one.
    func child(_ value: JSONValue, at key: any CodingKey) -> ValueDecoder {
        ValueDecoder(value: value, codingPath: codingPath + [key], context: context)
    }

    func mismatch<T>(_ type: T.Type, expected: String) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "must be \(expected), found \(value.typeName)"))
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        // A schema-free member stays exactly as parsed (member order, number text).
        if T.self == JSONValue.self, let same = value as? T { return same }
        switch T.self {
        case is Bool.Type:
            guard case .bool(let flag) = value, let result = flag as? T else { throw nullOrMismatch(type) }
            return result
        case is String.Type:
            guard case .string(let text) = value, let result = text as? T else { throw nullOrMismatch(type) }
            return result
        case is Double.Type:
            guard case .number(let text) = value, let number = Double(text), let result = number as? T else { throw nullOrMismatch(type) }
            return result
        case is Float.Type:
            guard case .number(let text) = value, let number = Float(text), let result = number as? T else { throw nullOrMismatch(type) }
            return result
        case let integerType as any FixedWidthInteger.Type:
            guard case .number(let text) = value else { throw nullOrMismatch(type) }
            guard let integer = Self.integer(integerType, from: text), let result = integer as? T else {
                throw DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "must be a whole number that fits \(T.self)"))
            }
            return result
        default:
            return try T(from: self)
        }
    }

    /// A null where a value is required reads as missing; anything else is the wrong type.
    private func nullOrMismatch<T>(_ type: T.Type, expected: String? = nil) -> DecodingError {
        if case .null = value { return DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "is missing")) }
        return mismatch(type, expected: expected ?? expectation(type))
    }

    /// An integer from number text: digits as they are, or a whole value written with a fraction or an
    /// exponent (`1.0`, `1e3`) when it converts exactly.
    private static func integer<I: FixedWidthInteger>(_ type: I.Type, from text: String) -> I? {
        if let exact = I(text) { return exact }
        guard let number = Double(text), number.isFinite else { return nil }
        return I(exactly: number)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw nullOrMismatch([String: JSONValue].self, expected: "an object") }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw nullOrMismatch([JSONValue].self, expected: "an array") }
        return UnkeyedContainer(items: items, decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [(key: String, value: JSONValue)]
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        var seen = Set<String>()
        return members.compactMap { member in seen.insert(member.key).inserted ? Key(stringValue: member.key) : nil }
    }

    func contains(_ key: Key) -> Bool { members.contains { $0.key == key.stringValue } }

    private func member(_ key: Key) throws -> ValueDecoder {
        guard let found = members.last(where: { $0.key == key.stringValue }) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "is missing"))
        }
        return decoder.child(found.value, at: key)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard case .null = try member(key).value else { return false }
        return true
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).decodeValue(type) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try member(key).decodeValue(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(key).decodeValue(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try member(key).decodeValue(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try member(key).decodeValue(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try member(key).decodeValue(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try member(key).decodeValue(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try member(key).decodeValue(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try member(key).decodeValue(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(key).decodeValue(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try member(key).decodeValue(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try member(key).decodeValue(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try member(key).decodeValue(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try member(key).decodeValue(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try member(key).decodeValue(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try member(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try member(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder { decoder }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        (try? member(key)) ?? decoder.child(.null, at: key)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var currentIndex = 0

    init(items: [JSONValue], decoder: ValueDecoder) {
        self.items = items
        self.decoder = decoder
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    /// The next item's decoder; the position advances only when decoding it succeeds.
    private func next<T>(_ type: T.Type) throws -> ValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [PositionKey(currentIndex)], debugDescription: "is missing"))
        }
        return decoder.child(items[currentIndex], at: PositionKey(currentIndex))
    }

    private mutating func take<T: Decodable>(_ type: T.Type) throws -> T {
        let result = try next(type).decodeValue(type)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard case .null = try next(JSONValue.self).value else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try take(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try take(type) }
    mutating func decode(_ type: String.Type) throws -> String { try take(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try take(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try take(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try take(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try take(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try take(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try take(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try take(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try take(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try take(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try take(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try take(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try take(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try next(JSONValue.self).container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try next(JSONValue.self).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = try next(JSONValue.self)
        currentIndex += 1
        return decoder
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        guard case .null = decoder.value else { return false }
        return true
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.decodeValue(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.decodeValue(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.decodeValue(type) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.decodeValue(type) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.decodeValue(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.decodeValue(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.decodeValue(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.decodeValue(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decodeValue(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.decodeValue(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.decodeValue(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.decodeValue(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.decodeValue(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.decodeValue(type) }
}

/// JSONValue is `Codable` so a fixed schema can hold a schema-free part (plugin `vars`), and a type can
/// write itself as a built value (``Cookie``). Through ``JSONValueDecoder`` a value arrives exactly as
/// parsed; other decoders and encoders see numbers as `Int64` or `Double`, and objects in their own order.
extension JSONValue: Codable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let flag):
            var single = encoder.singleValueContainer()
            try single.encode(flag)
        case .number(let text):
            var single = encoder.singleValueContainer()
            if let integer = Int64(text) { try single.encode(integer) } else { try single.encode(Double(text) ?? .nan) }
        case .string(let text):
            var single = encoder.singleValueContainer()
            try single.encode(text)
        case .array(let items):
            var unkeyed = encoder.unkeyedContainer()
            for item in items { try unkeyed.encode(item) }
        case .object(let members):
            var keyed = encoder.container(keyedBy: MemberKey.self)
            for member in members { try keyed.encode(member.value, forKey: MemberKey(stringValue: member.key)) }
        }
    }

    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: MemberKey.self) {
            var members: [(key: String, value: JSONValue)] = []
            for key in keyed.allKeys { members.append((key.stringValue, try keyed.decode(JSONValue.self, forKey: key))) }
            self = .object(members)
        } else if var unkeyed = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !unkeyed.isAtEnd { items.append(try unkeyed.decode(JSONValue.self)) }
            self = .array(items)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let flag = try? single.decode(Bool.self) {
                self = .bool(flag)
            } else if let text = try? single.decode(String.self) {
                self = .string(text)
            } else {
                self = .number(JSONWriter.number(try single.decode(Double.self)))
            }
        }
    }
}

private struct MemberKey: CodingKey {
    var stringValue: String
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    var intValue: Int? { nil }
}
