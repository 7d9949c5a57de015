import Testing
@testable import SiteConfig

@Suite struct YAMLParserTests {
    func parse(_ text: String) throws(ConfigError) -> (YAMLNode?, [ConfigDiagnostic]) {
        let parser = YAMLParser(text: text, file: "t.yaml")
        let root = try parser.parseDocument()
        return (root, parser.diagnostics)
    }

    @Test func marksAreOneBasedLineAndColumn() throws {
        let (root, diagnostics) = try parse("a: 1\nb:\n  c: [x, \"y\"]\n")
        #expect(diagnostics.isEmpty)
        let b = try #require(root?["b"])
        #expect(b.mark == SourceMark(file: "t.yaml", line: 3, column: 3))
        let items = try #require(b["c"]?.items)
        #expect(items.map(\.mark.column) == [7, 10])
        #expect(items.map(\.scalarText) == ["x", "y"])
        #expect(root?["a"]?.mark == SourceMark(file: "t.yaml", line: 1, column: 4))
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let (root, _) = try parse("é: ü\nk: v\n")
        #expect(root?["é"]?.mark.column == 4)
    }

    @Test func aliasesResolveToTheAnchoredNode() throws {
        let (root, _) = try parse("base: &b {x: 1}\ncopy: *b\nlist: [&s hi, *s]\n")
        #expect(root?["copy"]?["x"]?.scalarText == "1")
        #expect(root?["list"]?.items?.map(\.scalarText) == ["hi", "hi"])
    }

    @Test func mergeKeysFillMissingKeysOnly() throws {
        let text = """
            one: &one {a: 1, b: 1}
            two: &two {b: 2, c: 2}
            merged:
              <<: [*one, *two]
              a: explicit
            """
        let (root, diagnostics) = try parse(text)
        #expect(diagnostics.isEmpty)
        let merged = try #require(root?["merged"]?.pairs)
        #expect(merged.map(\.name) == ["a", "b", "c"])
        #expect(merged.map { $0.value.scalarText } == ["explicit", "1", "2"])
    }

    @Test func duplicateKeysAreReportedAndTheFirstKept() throws {
        let (root, diagnostics) = try parse("a: 1\nb: 2\na: 3\n")
        #expect(root?["a"]?.scalarText == "1")
        #expect(diagnostics.map(\.description) == ["t.yaml:3:1: error: duplicate key 'a' (first defined at line 1)"])
    }

    @Test func nonScalarKeysAreReported() throws {
        let (_, diagnostics) = try parse("? [a, b]\n: c\n")
        #expect(diagnostics.first?.message.contains("mapping key must be a plain text") == true)
    }

    @Test func scalarStylesAreKept() throws {
        let (root, _) = try parse("p: 1\ns: '1'\nd: \"1\"\nl: |\n  x\nn:\nt: !!str 2\n")
        #expect(root?["p"]?.content.isPlain == true)
        #expect(root?["s"]?.content.isPlain == false)
        #expect(root?["d"]?.content.isPlain == false)
        #expect(root?["l"]?.scalarText == "x\n")
        #expect(root?["n"]?.isNull == true)
        #expect(root?["s"]?.isNull == false)
        #expect(root?["t"]?.content.isPlain == false, "an explicit !!str tag makes a plain scalar a string")
    }

    @Test func aliasBombsAreRefused() {
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...8 {
            let previous = "*a\(level - 1)"
            text += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        #expect(throws: ConfigError.self) { try parse(text) }
    }

    @Test func deepNestingIsRefused() {
        let text = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect {
            try parse(text)
        } throws: { error in
            (error as? ConfigError)?.diagnostics.first?.message.contains("nesting deeper") == true
        }
    }

    @Test func syntaxErrorsCarryTheProblemMark() {
        #expect {
            try parse("a: [1, 2\nb: 3\n")
        } throws: { error in
            guard let diagnostic = (error as? ConfigError)?.diagnostics.first else { return false }
            return diagnostic.message.hasPrefix("YAML syntax:") && diagnostic.mark.line == 2
        }
    }

    @Test func emptyInputHasNoDocument() throws {
        #expect(try parse("").0 == nil)
        #expect(try parse("# only a comment\n").0 == nil)
    }
}

extension YAMLNode.Content {
    var isPlain: Bool {
        if case .scalar(_, .plain) = self { return true }
        return false
    }
}
