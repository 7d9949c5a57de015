/// A YAML node with its position, after anchors, aliases and merge keys were resolved.
struct YAMLNode: Sendable {
    /// How a scalar was written; only plain scalars resolve to null, booleans and numbers.
    enum ScalarStyle: Sendable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    enum Content: Sendable {
        case scalar(String, ScalarStyle)
        case sequence([YAMLNode])
        /// Pairs in file order; keys are scalar nodes (the builder rejects others).
        case mapping([Pair])
    }

    struct Pair: Sendable {
        var key: YAMLNode
        var value: YAMLNode

        /// The key's text.
        var name: String { key.scalarText ?? "" }
    }

    var content: Content
    var mark: SourceMark
    /// Nodes in this subtree, itself included (bounds alias expansion, "billion laughs").
    var weight: Int

    init(_ content: Content, mark: SourceMark) {
        self.content = content
        self.mark = mark
        switch content {
        case .scalar: weight = 1
        case .sequence(let items): weight = items.reduce(1) { $0 + $1.weight }
        case .mapping(let pairs): weight = pairs.reduce(1) { $0 + $1.key.weight + $1.value.weight }
        }
    }

    /// The text of a scalar, nil for collections.
    var scalarText: String? {
        if case .scalar(let text, _) = content { return text }
        return nil
    }

    /// A plain `null`, `~` or empty scalar (YAML 1.2 core schema).
    var isNull: Bool {
        if case .scalar(let text, .plain) = content { return ["", "~", "null", "Null", "NULL"].contains(text) }
        return false
    }

    /// The pairs of a mapping, nil otherwise.
    var pairs: [Pair]? {
        if case .mapping(let pairs) = content { return pairs }
        return nil
    }

    /// The items of a sequence, nil otherwise.
    var items: [YAMLNode]? {
        if case .sequence(let items) = content { return items }
        return nil
    }

    /// The value of `key` in a mapping.
    subscript(key: String) -> YAMLNode? {
        pairs?.first { $0.name == key }?.value
    }

    /// What the node is, for messages: "a mapping", "a list", "the text 'abc'", "null".
    var kindDescription: String {
        switch content {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let text, _):
            if isNull { return "nothing (null)" }
            let shown = text.count > 40 ? String(text.prefix(37)) + "..." : text
            return "'\(shown)'"
        }
    }
}
