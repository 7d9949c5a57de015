/// A decoded value and where it was written.
struct Marked<Value: Decodable>: Decodable {
    var value: Value
    /// Where the value starts.
    var mark: SourceMark
    /// Where the key naming the value is written (the value's mark for list items).
    var keyMark: SourceMark

    init(from decoder: any Decoder) throws {
        guard let decoder = decoder as? NodeDecoder else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
        }
        mark = decoder.node.mark
        keyMark = decoder.keyMark ?? decoder.node.mark
        value = try decoder.decode(Value.self)
    }

    /// A value the builder took from a node by hand, marked where the node starts.
    init(value: Value, mark: SourceMark) {
        self.value = value
        self.mark = mark
        keyMark = mark
    }
}

/// The node itself, for values whose shape is free (JSON bodies, `with:`) or decided by hand.
struct RawNode: Decodable, DecodesNull {
    var node: YAMLNode
    /// Where the key naming the node is written (the node's mark for list items).
    var keyMark: SourceMark

    init(from decoder: any Decoder) throws {
        guard let decoder = decoder as? NodeDecoder else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
        }
        node = decoder.node
        keyMark = decoder.keyMark ?? decoder.node.mark
    }
}

/// A value or a list of values: `status: 200` and `status: [302, 303]` both decode.
struct OneOrMany<Element: Decodable>: Decodable {
    var items: [Element]

    init(from decoder: any Decoder) throws {
        guard let decoder = decoder as? NodeDecoder else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
        }
        if decoder.node.items != nil {
            items = try decoder.decode([Element].self)
        } else {
            items = [try decoder.decode(Element.self)]
        }
    }
}

/// A mapping whose keys are names chosen by the author (credentials, form fields, headers,
/// extractions), kept in file order. An entry whose value fails to decode is reported and skipped.
struct OrderedMap<Value: Decodable>: Decodable {
    struct Entry {
        var key: String
        var keyMark: SourceMark
        var value: Value
    }

    var entries: [Entry]

    init(from decoder: any Decoder) throws {
        guard let decoder = decoder as? NodeDecoder else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
        }
        guard let pairs = decoder.node.pairs else {
            if decoder.node.isNull {
                entries = []
                return
            }
            throw decoder.error("expected a mapping of names to values, found \(decoder.node.kindDescription)")
        }
        entries = []
        for pair in pairs {
            do {
                let value = try decoder.child(pair.value, key: NameKey(pair.name)).decode(Value.self)
                entries.append(Entry(key: pair.name, keyMark: pair.key.mark, value: value))
            } catch {
                decoder.context.record(error, at: pair.value.mark)
            }
        }
    }
}

struct NameKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
