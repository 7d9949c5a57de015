import Locking

/// Collects the problems found while decoding, so one pass reports all of them.
final class DecodingContext {
    private(set) var diagnostics: [ConfigDiagnostic] = []
    private var seen = Set<ConfigDiagnostic>()

    func record(_ diagnostic: ConfigDiagnostic) {
        if seen.insert(diagnostic).inserted { diagnostics.append(diagnostic) }
    }

    /// Records any error thrown by a decode, as a diagnostic at `fallback` unless it carries a mark.
    func record(_ error: any Error, at fallback: SourceMark) {
        switch error {
        case let error as NodeError:
            record(error.diagnostic)
        case let error as ConfigError:
            error.diagnostics.forEach(record)
        case DecodingError.keyNotFound(let key, _):
            record(ConfigDiagnostic(fallback, "missing key '\(key.stringValue)'"))
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            record(ConfigDiagnostic(fallback, context.debugDescription))
        default:
            record(ConfigDiagnostic(fallback, "\(error)"))
        }
    }
}

/// An error about one node, thrown inside decoding and recorded by the nearest optional field.
struct NodeError: Error {
    var diagnostic: ConfigDiagnostic

    init(_ mark: SourceMark, _ message: String) {
        diagnostic = ConfigDiagnostic(mark, message)
    }
}

/// Types decoded even from a null node (they want to see that the key was written).
protocol DecodesNull {}

/// A `Decoder` over a ``YAMLNode``: configuration types are plain `Decodable` types.
///
/// Two departures from a strict decoder make one pass report every problem: an optional field whose
/// value fails to decode is recorded in the ``DecodingContext`` and left nil, and a mapping decoded
/// with `CaseIterable` coding keys reports each unknown key, with a "did you mean" when one is close.
struct NodeDecoder: Decoder {
    /// Keys starting with `x-` are ignored (as in Compose files), so anchors can live in them.
    static let extensionKeyPrefix = "x-"

    let node: YAMLNode
    /// Where the mapping key naming this node is written (nil for list items and the root).
    let keyMark: SourceMark?
    let context: DecodingContext
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(node: YAMLNode, context: DecodingContext, codingPath: [any CodingKey] = [], keyMark: SourceMark? = nil) {
        self.node = node
        self.context = context
        self.codingPath = codingPath
        self.keyMark = keyMark
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let pairs: [YAMLNode.Pair]
        if let mapping = node.pairs {
            pairs = mapping
        } else if node.isNull {
            pairs = []
        } else {
            throw error("expected a mapping of keys to values, found \(node.kindDescription)")
        }
        if let known = knownKeyNames(Key.self) {
            for pair in pairs where !known.contains(pair.name) && !pair.name.hasPrefix(Self.extensionKeyPrefix) {
                var message = "unknown key '\(pair.name)'"
                if let suggestion = Spelling.closest(to: pair.name, among: known) {
                    message += "; did you mean '\(suggestion)'?"
                } else if known.count <= 12 {
                    message += " (expected one of: \(known.joined(separator: ", ")))"
                }
                context.record(ConfigDiagnostic(pair.key.mark, message))
            }
        }
        return KeyedDecodingContainer(KeyedNodeContainer<Key>(decoder: self, pairs: pairs, names: pairs.map(\.name)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let items = node.items else {
            throw error("expected a list, found \(node.kindDescription)")
        }
        return UnkeyedNodeContainer(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleNodeContainer(decoder: self)
    }

    /// `login.steps[0].expect.status`, the prefix of type errors; empty at the top.
    var path: String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key is IndexKey {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    /// `message` prefixed with the key path, for errors about this node.
    func error(_ message: String) -> NodeError {
        NodeError(node.mark, path.isEmpty ? message : "\(path): \(message)")
    }

    func child(_ node: YAMLNode, key: any CodingKey, keyMark: SourceMark? = nil) -> NodeDecoder {
        NodeDecoder(node: node, context: context, codingPath: codingPath + [key], keyMark: keyMark)
    }

    /// Decodes `T` from `node`: scalars through the single-value container, others by `init(from:)`.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: self)
    }
}

/// Key names per coding-key type, computed once: reflecting `allCases` on every mapping is slow.
private let knownKeyCache = Locked<[ObjectIdentifier: [String]?]>([:])

private func knownKeyNames<Key: CodingKey>(_ type: Key.Type) -> [String]? {
    let id = ObjectIdentifier(type)
    if let cached = knownKeyCache.withLock({ $0[id] }) { return cached }
    let names = (type as? any CaseIterable.Type).map { caseNames($0) }
    knownKeyCache.withLock { $0[id] = names }
    return names
}

private func caseNames<C: CaseIterable>(_ type: C.Type) -> [String] {
    type.allCases.compactMap { ($0 as? any CodingKey)?.stringValue }
}

struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: NodeDecoder
    let pairs: [YAMLNode.Pair]
    /// The keys' texts, in pair order (looked up without copying pairs).
    let names: [String]
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { names.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { names.contains(key.stringValue) }

    private func value(_ key: Key) -> YAMLNode? {
        guard let index = names.firstIndex(of: key.stringValue) else { return nil }
        return pairs[index].value
    }

    private func child(_ node: YAMLNode, _ key: Key) -> NodeDecoder {
        let keyMark = names.firstIndex(of: key.stringValue).map { pairs[$0].key.mark }
        return decoder.child(node, key: key, keyMark: keyMark)
    }

    func decodeNil(forKey key: Key) throws -> Bool { value(key)?.isNull ?? true }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let node = value(key) else {
            throw NodeError(decoder.node.mark, "missing key '\(key.stringValue)'")
        }
        return try child(node, key).decode(T.self)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let node = value(key) else { return nil }
        if node.isNull && !(T.self is any DecodesNull.Type) { return nil }
        do {
            return try child(node, key).decode(T.self)
        } catch {
            decoder.context.record(error, at: node.mark)
            return nil
        }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type as Bool.Type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type, key) }

    private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        try decode(type, forKey: key) as T
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, key) }

    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        try decodeIfPresent(type, forKey: key) as T?
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        guard let node = value(key) else { throw NodeError(decoder.node.mark, "missing key '\(key.stringValue)'") }
        return try decoder.child(node, key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard let node = value(key) else { throw NodeError(decoder.node.mark, "missing key '\(key.stringValue)'") }
        return try decoder.child(node, key: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        guard let node = value(key) else { throw NodeError(decoder.node.mark, "missing key '\(key.stringValue)'") }
        return decoder.child(node, key: key)
    }
}

private struct UnkeyedNodeContainer: UnkeyedDecodingContainer {
    let decoder: NodeDecoder
    let items: [YAMLNode]
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(decoder: NodeDecoder, items: [YAMLNode]) {
        self.decoder = decoder
        self.items = items
    }

    private mutating func next() throws -> NodeDecoder {
        guard !isAtEnd else { throw NodeError(decoder.node.mark, "the list has too few items") }
        defer { currentIndex += 1 }
        return decoder.child(items[currentIndex], key: IndexKey(currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(T.self) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next().decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    { try next().container(keyedBy: type) }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct SingleNodeContainer: SingleValueDecodingContainer {
    let decoder: NodeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var node: YAMLNode { decoder.node }

    init(decoder: NodeDecoder) { self.decoder = decoder }

    func decodeNil() -> Bool { node.isNull }

    private func plainScalar(expected: String) throws -> String {
        guard case .scalar(let text, let style) = node.content, !node.isNull else {
            throw decoder.error("expected \(expected), found \(node.kindDescription)")
        }
        guard style == .plain else {
            throw decoder.error("expected \(expected), found the quoted text \(node.kindDescription) (remove the quotes)")
        }
        return text
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        let text = try plainScalar(expected: "true or false")
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: throw decoder.error("expected true or false, found \(node.kindDescription)")
        }
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .scalar(let text, _) = node.content, !node.isNull else {
            throw decoder.error("expected a text, found \(node.kindDescription)")
        }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        let text = try plainScalar(expected: "a number")
        guard let value = Double(text), value.isFinite else {
            throw decoder.error("expected a number, found \(node.kindDescription)")
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let text = try plainScalar(expected: "a whole number")
        guard let value = T(text) else {
            if Int64(text) != nil || text.allSatisfy({ $0.isNumber || $0 == "-" }) && !text.isEmpty {
                throw decoder.error("\(text) is out of range (\(T.min)...\(T.max))")
            }
            throw decoder.error("expected a whole number, found \(node.kindDescription)")
        }
        return value
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(T.self) }
}
