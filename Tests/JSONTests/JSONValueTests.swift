import Foundation
import Testing
import JSON

private func fixture(_ name: String) throws -> [UInt8] {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"))
    return Array(try Data(contentsOf: url))
}

@Suite struct JSONParserTests {
    @Test("a document with every escape, number form and literal parses to the values it means (Fixtures/sample.json)")
    func sampleDocument() throws {
        let document = try JSONValue.parse(try fixture("sample.json"))
        #expect(document["escapes"] == .string("quote \" backslash \\ slash / \u{08}\u{0C}\n\r\t \u{00}\u{1F}\u{7F} é é 😀 😀"))
        #expect(document["numbers"] == .array([
            .number("0"), .number("-0"), .number("1.10"), .number("-2.5e-3"), .number("1E+2"),
            .number("12345678901234567890123"), .number("1e400"),
        ]))
        // Numbers keep their text exactly.
        guard case .array(let numbers)? = document["numbers"], case .number(let text) = numbers[2] else {
            Issue.record("numbers is not an array of numbers")
            return
        }
        #expect(text == "1.10")
        #expect(document["literals"] == .array([.bool(true), .bool(false), .null]))
        #expect(JSONPointer.resolve("/nested/a/b/1", in: document) == .object([]))
        // A repeated name: every member is kept, lookups take the last.
        guard case .object(let members) = document else {
            Issue.record("the document is not an object")
            return
        }
        #expect(members.filter { $0.key == "dup" }.count == 2)
        #expect(document["dup"] == .number("2"))
    }

    struct InvalidCase: Decodable, Sendable, CustomTestStringConvertible {
        var offset: Int
        var text: String
        var testDescription: String { "byte \(offset) of \(text.debugDescription)" }
    }

    static let invalidCases: [InvalidCase] = {
        guard let bytes = try? fixture("invalid.json"), let cases = try? JSONValueDecoder().decode([InvalidCase].self, from: bytes) else {
            return []
        }
        return cases
    }()

    @Test func theInvalidCasesFixtureReads() {
        #expect(Self.invalidCases.count >= 30)
    }

    @Test("invalid text is refused with the byte offset of the problem (Fixtures/invalid.json)", arguments: invalidCases)
    func invalidText(_ testCase: InvalidCase) {
        let error = #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(testCase.text) }
        #expect(error?.offset == testCase.offset)
        #expect(error?.description.contains("byte \(testCase.offset)") == true)
    }

    @Test func errorsNameTheLineAndNeverQuoteTheText() {
        let text = "{\n  \"token\": \"SECRETVALUE\",\n  \"n\": 01\n}"
        let error = #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(text) }
        #expect(error?.line == 3)
        #expect(error?.description.contains("SECRETVALUE") == false)
        #expect(error?.description.contains("leading zero") == true)
    }

    @Test func nestingIsBoundedAndTheBoundItselfParses() throws {
        let limit = JSONValue.maximumDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        _ = try JSONValue.parse(deepest)
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        let error = #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(tooDeep) }
        #expect(error?.offset == limit)
        let objects = String(repeating: "{\"a\":", count: limit + 1) + "1" + String(repeating: "}", count: limit + 1)
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(objects) }
    }

    @Test func surrogatePairsJoinAndLoneSurrogatesAreRefused() throws {
        #expect(try JSONValue.parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try JSONValue.parse(#""\ud834\udd1e x""#) == .string("𝄞 x"))
        for lone in [#""\ud83d""#, #""\ude00""#, #""\ud83d\u0020""#, #""\ud83d\ud83d""#, #""a\udfffb""#] {
            let error = #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(lone) }
            #expect(error?.message.contains("surrogate") == true)
        }
    }

    @Test func bytesThatAreNotUTF8BecomeReplacementCharacters() throws {
        let bytes: [UInt8] = [0x22, 0x61, 0xFF, 0x62, 0x22]
        #expect(try JSONValue.parse(bytes) == .string("a\u{FFFD}b"))
    }

    @Test func aByteOrderMarkIsSkippedAndSurroundingWhitespaceAllowed() throws {
        #expect(try JSONValue.parse([0xEF, 0xBB, 0xBF] + Array(" \t\r\n[1]\n".utf8)) == .array([.number("1")]))
    }

    @Test func scalarsStandAlone() throws {
        #expect(try JSONValue.parse("42") == .number("42"))
        #expect(try JSONValue.parse("\"x\"") == .string("x"))
        #expect(try JSONValue.parse("null") == .null)
    }
}

@Suite struct JSONWriterTests {
    @Test("RFC 8259 section 7: quote, backslash and control characters escaped, short forms where they exist")
    func everyEscape() throws {
        var text = "\"\\/"
        for code in 0..<0x20 { text.unicodeScalars.append(Unicode.Scalar(UInt8(code))) }
        text += "\u{7F}é😀"
        let expected = #""\"\\/\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f"#
            + #"\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f\u007fé😀""#
        #expect(JSONWriter.string(text) == expected)
        #expect(try JSONValue.parse(expected) == .string(text))
    }

    @Test func layouts() {
        let value = JSONValue.object([("a", .array([.number("1"), .bool(true), .null])), ("b", .object([("c", .string("d"))]))])
        #expect(value.serialized == #"{"a":[1,true,null],"b":{"c":"d"}}"#)
        #expect(JSONWriter.write(value, layout: .spaced) == #"{"a": [1, true, null], "b": {"c": "d"}}"#)
    }

    @Test func numbers() {
        #expect(JSONWriter.number(1_700_000_000) == "1700000000")
        #expect(JSONWriter.number(-1) == "-1")
        #expect(JSONWriter.number(1.5) == "1.5")
        #expect(JSONWriter.number(1e20) == "1e+20")
        #expect(JSONWriter.number(.infinity) == "null")
        #expect(JSONWriter.number(.nan) == "null")
        for value in [0.1, 1_700_000_000.25, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude] {
            #expect(JSONValue.isNumberText(JSONWriter.number(value)))
            #expect(Double(JSONWriter.number(value)) == value)
        }
    }

    @Test("write then parse gives the value back, exactly", arguments: [
        #"{"b":[1,2.50,-0,1e3,true,false,null],"a":"x\"\\/\n\u0000é😀","":{}}"#,
        #"[12345678901234567890123,[],[[]],"",{"x":{"y":[{"z":null}]}}]"#,
        #""\u007f\b\f""#,
    ])
    func roundTrip(_ text: String) throws {
        let value = try JSONValue.parse(text)
        #expect(value.serialized == text)
        #expect(try JSONValue.parse(value.serialized) == value)
    }
}

@Suite struct JSONValueEqualityTests {
    @Test func numbersCompareByExactValue() {
        #expect(JSONValue.number("1") == .number("1.0"))
        #expect(JSONValue.number("1e3") == .number("1000"))
        #expect(JSONValue.number("0.5") == .number("5E-1"))
        #expect(JSONValue.number("-0") == .number("0"))
        #expect(JSONValue.number("12345678901234567890") != .number("12345678901234567891"))
        #expect(JSONValue.number("1") != .number("-1"))
        #expect(JSONValue.number("1") != .bool(true))
        #expect(Set([JSONValue.number("1.0"), .number("1"), .number("10e-1")]).count == 1)
    }

    @Test func objectsAreUnorderedAndTheLastOfARepeatedNameCounts() {
        let a = JSONValue.object([("x", .number("1")), ("y", .string("2"))])
        let b = JSONValue.object([("y", .string("2")), ("x", .number("1.0"))])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(JSONValue.object([("x", .number("0")), ("x", .number("1"))]) == .object([("x", .number("1"))]))
        #expect(JSONValue.object([("x", .number("1"))]) != .object([("x", .number("1")), ("y", .null)]))
        #expect(JSONValue.array([.number("1"), .number("2")]) != .array([.number("2"), .number("1")]))
    }

    @Test func plainText() {
        #expect(JSONValue.string("a\"b").plainText == "a\"b")
        #expect(JSONValue.number("1.10").plainText == "1.10")
        #expect(JSONValue.object([("a", .string("b"))]).plainText == #"{"a":"b"}"#)
    }
}

@Suite struct JSONPointerTests {
    @Test("RFC 6901 section 5's examples")
    func rfcExamples() throws {
        let document = try JSONValue.parse(#"""
        {"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8}
        """#)
        #expect(JSONPointer.resolve("", in: document) == document)
        #expect(JSONPointer.resolve("/foo", in: document) == .array([.string("bar"), .string("baz")]))
        #expect(JSONPointer.resolve("/foo/0", in: document) == .string("bar"))
        let expected = ["/": 0, "/a~1b": 1, "/c%d": 2, "/e^f": 3, "/g|h": 4, "/i\\j": 5, "/k\"l": 6, "/ ": 7, "/m~0n": 8]
        for (pointer, number) in expected {
            #expect(JSONPointer.resolve(pointer, in: document) == .number(String(number)), "\(pointer)")
        }
    }

    @Test func whatDoesNotResolve() throws {
        let document = try JSONValue.parse(#"{"a": [10, 20], "0": "zero", "~1": "tilde one"}"#)
        #expect(JSONPointer.resolve("/a/1", in: document) == .number("20"))
        #expect(JSONPointer.resolve("/a/01", in: document) == nil)
        #expect(JSONPointer.resolve("/a/2", in: document) == nil)
        #expect(JSONPointer.resolve("/a/-", in: document) == nil)
        #expect(JSONPointer.resolve("/a/+1", in: document) == nil)
        #expect(JSONPointer.resolve("/0", in: document) == .string("zero"))
        #expect(JSONPointer.resolve("/~01", in: document) == .string("tilde one"))
        #expect(JSONPointer.resolve("a", in: document) == nil)
        #expect(JSONPointer.resolve("/a/0/x", in: document) == nil)
    }

    @Test func pointersForPathsEscapeNames() {
        #expect(JSONPointer.pointer(for: [.key("a/b"), .index(3), .key("m~n")]) == "/a~1b/3/m~0n")
        #expect(JSONPointer.tokens(of: "/a~1b/3/m~0n") == ["a/b", "3", "m~n"])
    }
}
