internal import CYAML

/// Parses YAML text with the system libyaml into a ``YAMLNode`` tree.
///
/// Owns the `yaml_parser_t` and frees it in `deinit`. One document per file; aliases are expanded
/// (bounded), merge keys (`<<`) applied with explicit keys winning, and a key repeated in one mapping
/// reported (the first occurrence is kept so the rest of the file can still be checked).
final class YAMLParser {
    /// Deepest nesting accepted; the tree is walked recursively afterwards.
    static let maximumDepth = 200
    /// Most nodes a document may expand to through aliases ("billion laughs" guard).
    static let maximumWeight = 1_000_000

    /// Heap-allocated: libyaml keeps pointers into the struct (its read handler's data is the
    /// parser itself), so its address must never change, which a Swift property does not promise.
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let initialized: Bool
    private let input: UnsafeMutableBufferPointer<UInt8>
    private let file: String
    /// Problems that do not stop the parse (duplicate keys, bad merge values).
    private(set) var diagnostics: [ConfigDiagnostic] = []

    init(text: String, file: String) {
        self.file = file
        let bytes = Array(text.utf8)
        // libyaml reads the buffer during parsing, so it lives as long as the parser (capacity 1 at
        // least: an empty allocation has no base address).
        input = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = input.initialize(from: bytes)
        parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        parser.initialize(to: yaml_parser_t())
        initialized = yaml_parser_initialize(parser) == 1
        if initialized { yaml_parser_set_input_string(parser, input.baseAddress, bytes.count) }
    }

    deinit {
        if initialized { yaml_parser_delete(parser) }
        parser.deinitialize(count: 1)
        parser.deallocate()
        input.deallocate()
    }

    private enum Frame {
        case sequence(items: [YAMLNode], mark: SourceMark, anchor: String?)
        case mapping(pairs: [YAMLNode.Pair], pendingKey: YAMLNode?, merges: [YAMLNode], mark: SourceMark, anchor: String?)
    }

    /// Parses the single document; nil for a file without any document (empty or only comments).
    func parseDocument() throws(ConfigError) -> YAMLNode? {
        guard initialized else {
            throw ConfigError(ConfigDiagnostic(SourceMark(file: file, line: 1, column: 1), "out of memory starting the YAML parser"))
        }
        var anchors: [String: YAMLNode] = [:]
        var stack: [Frame] = []
        var document: YAMLNode?
        var documents = 0
        while true {
            var event = yaml_event_t()
            guard yaml_parser_parse(parser, &event) == 1 else { throw syntaxError() }
            defer { yaml_event_delete(&event) }
            let mark = self.mark(event.start_mark)
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return document
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw ConfigError(ConfigDiagnostic(mark, "a file holds one YAML document; remove this '---' and what follows or split the file"))
                }
            case YAML_ALIAS_EVENT:
                let name = string(event.data.alias.anchor)
                guard let target = anchors[name] else {
                    throw ConfigError(ConfigDiagnostic(mark, "unknown alias '*\(name)' (no '&\(name)' before it)"))
                }
                try add(target, to: &stack, document: &document)
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                let style: YAMLNode.ScalarStyle
                switch scalar.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: style = .literal
                case YAML_FOLDED_SCALAR_STYLE: style = .folded
                default: style = .plain
                }
                // An explicit tag such as `!!str 123` makes a plain scalar a string.
                let tagged = scalar.tag != nil && string(scalar.tag) == "tag:yaml.org,2002:str"
                let node = YAMLNode(.scalar(text, tagged && style == .plain ? .singleQuoted : style), mark: mark)
                if let anchor = scalar.anchor { anchors[string(anchor)] = node }
                try add(node, to: &stack, document: &document)
            case YAML_SEQUENCE_START_EVENT:
                guard stack.count < Self.maximumDepth else {
                    throw ConfigError(ConfigDiagnostic(mark, "nesting deeper than \(Self.maximumDepth) levels"))
                }
                let anchor = event.data.sequence_start.anchor.map(string)
                stack.append(.sequence(items: [], mark: mark, anchor: anchor))
            case YAML_MAPPING_START_EVENT:
                guard stack.count < Self.maximumDepth else {
                    throw ConfigError(ConfigDiagnostic(mark, "nesting deeper than \(Self.maximumDepth) levels"))
                }
                let anchor = event.data.mapping_start.anchor.map(string)
                stack.append(.mapping(pairs: [], pendingKey: nil, merges: [], mark: mark, anchor: anchor))
            case YAML_SEQUENCE_END_EVENT:
                guard case .sequence(let items, let start, let anchor) = stack.popLast() else { continue }
                let node = YAMLNode(.sequence(items), mark: start)
                if let anchor { anchors[anchor] = node }
                try add(node, to: &stack, document: &document)
            case YAML_MAPPING_END_EVENT:
                guard case .mapping(let pairs, _, let merges, let start, let anchor) = stack.popLast() else { continue }
                let node = YAMLNode(.mapping(applyMerges(merges, to: pairs)), mark: start)
                if let anchor { anchors[anchor] = node }
                try add(node, to: &stack, document: &document)
            default:
                continue
            }
        }
    }

    /// Places a finished node: as the document, a list item, a mapping key or a mapping value.
    private func add(_ node: YAMLNode, to stack: inout [Frame], document: inout YAMLNode?) throws(ConfigError) {
        guard node.weight <= Self.maximumWeight else {
            throw ConfigError(ConfigDiagnostic(node.mark, "aliases expand to more than \(Self.maximumWeight) nodes"))
        }
        guard let top = stack.popLast() else {
            document = node
            return
        }
        switch top {
        case .sequence(var items, let mark, let anchor):
            items.append(node)
            stack.append(.sequence(items: items, mark: mark, anchor: anchor))
        case .mapping(var pairs, let pendingKey, var merges, let mark, let anchor):
            guard let key = pendingKey else {
                if node.scalarText == nil {
                    diagnostics.append(ConfigDiagnostic(node.mark, "a mapping key must be a plain text, not \(node.kindDescription)"))
                }
                stack.append(.mapping(pairs: pairs, pendingKey: node, merges: merges, mark: mark, anchor: anchor))
                return
            }
            if case .scalar("<<", .plain) = key.content {
                // YAML merge key: a mapping or a list of mappings whose entries fill in missing keys.
                let sources = node.items ?? [node]
                for source in sources {
                    if source.pairs != nil {
                        merges.append(source)
                    } else {
                        diagnostics.append(ConfigDiagnostic(source.mark, "a merge key '<<' takes a mapping or a list of mappings, found \(source.kindDescription)"))
                    }
                }
            } else if let name = key.scalarText {
                if let first = pairs.first(where: { $0.name == name }) {
                    diagnostics.append(ConfigDiagnostic(
                        key.mark, "duplicate key '\(name)' (first defined at line \(first.key.mark.line))"))
                } else {
                    pairs.append(YAMLNode.Pair(key: key, value: node))
                }
            }
            stack.append(.mapping(pairs: pairs, pendingKey: nil, merges: merges, mark: mark, anchor: anchor))
        }
    }

    /// Keys written in the mapping win over merged ones; earlier merge sources win over later ones.
    private func applyMerges(_ merges: [YAMLNode], to pairs: [YAMLNode.Pair]) -> [YAMLNode.Pair] {
        guard !merges.isEmpty else { return pairs }
        var result = pairs
        var present = Set(pairs.map(\.name))
        for source in merges {
            for pair in source.pairs ?? [] where present.insert(pair.name).inserted {
                result.append(pair)
            }
        }
        return result
    }

    private func syntaxError() -> ConfigError {
        let state = parser.pointee
        let problem = state.problem.map { String(cString: $0) } ?? "invalid YAML"
        var message = problem
        if let context = state.context {
            message += " " + String(cString: context)
            if state.context_mark.line != state.problem_mark.line || state.context_mark.column != state.problem_mark.column {
                message += " at line \(state.context_mark.line + 1), column \(state.context_mark.column + 1)"
            }
        }
        let mark: SourceMark
        switch state.error {
        case YAML_READER_ERROR:
            // Reader errors report a byte offset rather than a line.
            message = "\(problem) at byte \(state.problem_offset) (files must be UTF-8)"
            mark = SourceMark(file: file, line: 1, column: 1)
        default:
            mark = self.mark(state.problem_mark)
        }
        return ConfigError(ConfigDiagnostic(mark, "YAML syntax: \(message)"))
    }

    private func mark(_ mark: yaml_mark_t) -> SourceMark {
        SourceMark(file: file, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    private func string(_ pointer: UnsafeMutablePointer<yaml_char_t>) -> String {
        String(cString: UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self))
    }
}
