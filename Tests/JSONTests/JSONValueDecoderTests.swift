import Testing
import JSON

@Suite struct JSONValueDecoderTests {
    struct Record: Decodable, Equatable {
        var name: String
        var flag: Bool?
        var count: Int?
        var ratio: Double?
        var small: UInt8?
        var tags: [String]?
        var extra: JSONValue?
        var inner: Inner?

        struct Inner: Decodable, Equatable {
            var id: Int64
        }
    }

    let decoder = JSONValueDecoder()

    @Test func aDocumentDecodesAndSchemaFreePartsStayAsWritten() throws {
        let text = #"{"name": "a", "flag": false, "count": 3, "ratio": 0.25, "small": 255, "tags": ["x", "y"],"#
            + #" "extra": {"z": 1.10, "a": [true]}, "inner": {"id": 9007199254740993}, "unknown": 1}"#
        let record = try decoder.decode(Record.self, from: text)
        #expect(record.name == "a" && record.flag == false && record.count == 3 && record.ratio == 0.25 && record.small == 255)
        #expect(record.tags == ["x", "y"])
        #expect(record.inner?.id == 9_007_199_254_740_993)  // above 2^53: read from its digits, not through Double
        #expect(record.extra?.serialized == #"{"z":1.10,"a":[true]}"#)
    }

    @Test func nullAndAbsentOptionalsAreNil() throws {
        let record = try decoder.decode(Record.self, from: #"{"name": "a", "flag": null}"#)
        #expect(record == Record(name: "a"))
    }

    @Test func wholeNumbersWrittenWithAFractionOrExponentAreIntegers() throws {
        #expect(try decoder.decode([Int].self, from: "[1.0, 1e2, -3]") == [1, 100, -3])
    }

    @Test func theRepeatedNameThatCountsIsTheLast() throws {
        #expect(try decoder.decode(Record.self, from: #"{"name": "first", "name": "last"}"#).name == "last")
    }

    struct Failure: CustomTestStringConvertible, Sendable {
        var text: String
        var pointer: String
        var kind: JSONDecodingError.Kind
        var reason: String
        var line: Int
        var testDescription: String { "\(pointer): \(reason)" }
    }

    @Test("errors name the place, what was expected and what was found, never the value", arguments: [
        Failure(text: "{\n\"flag\": true}", pointer: "/name", kind: .missing, reason: "is missing", line: 1),
        Failure(text: "{\"name\": null}", pointer: "/name", kind: .missing, reason: "is missing", line: 1),
        Failure(text: "{\"name\": \"a\",\n \"flag\": \"SECRETVALUE\"}", pointer: "/flag", kind: .wrongType,
                reason: "must be true or false, found a string", line: 2),
        Failure(text: "{\"name\": 1}", pointer: "/name", kind: .wrongType, reason: "must be a string, found a number", line: 1),
        Failure(text: "{\"name\": \"a\", \"count\": 1.5}", pointer: "/count", kind: .wrongType, reason: "must be a whole number", line: 1),
        Failure(text: "{\"name\": \"a\", \"small\": 256}", pointer: "/small", kind: .wrongType, reason: "must be a whole number", line: 1),
        Failure(text: "{\"name\": \"a\", \"count\": true}", pointer: "/count", kind: .wrongType,
                reason: "must be a whole number, found a boolean", line: 1),
        Failure(text: "{\"name\": \"a\",\n\n \"tags\": [\"x\",\n 7]}", pointer: "/tags/1", kind: .wrongType,
                reason: "must be a string, found a number", line: 4),
        Failure(text: "{\"name\": \"a\", \"tags\": {}}", pointer: "/tags", kind: .wrongType, reason: "must be an array, found an object", line: 1),
        Failure(text: "{\"name\": \"a\",\n \"inner\": {}}", pointer: "/inner/id", kind: .missing, reason: "is missing", line: 2),
        Failure(text: "[1]", pointer: "", kind: .wrongType, reason: "must be an object, found an array", line: 1),
        Failure(text: "{\"name\": \"a\",\n \"tags\": [\"SECRETVALUE\"", pointer: "", kind: .syntax, reason: "unterminated array", line: 2),
    ])
    func failures(_ failure: Failure) {
        let error = #expect(throws: JSONDecodingError.self) { try decoder.decode(Record.self, from: failure.text) }
        #expect(error.map { JSONPointer.pointer(for: $0.path) } == failure.pointer)
        #expect(error?.kind == failure.kind)
        #expect(error?.reason.contains(failure.reason) == true, "\(error?.reason ?? "")")
        #expect(error?.line == failure.line)
        #expect(error?.description.contains("SECRETVALUE") == false)
    }

    struct Checked: Decodable {
        var when: String
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            when = try container.decode(String.self, forKey: .when)
            guard when.hasPrefix("20") else {
                throw DecodingError.dataCorruptedError(forKey: .when, in: container, debugDescription: "is not a time")
            }
        }
        enum CodingKeys: String, CodingKey { case when }
    }

    @Test func aTypesOwnCheckReportsItsMessageAndPlace() {
        let error = #expect(throws: JSONDecodingError.self) { try decoder.decode([Checked].self, from: "[{\"when\": \"2026\"},\n{\"when\": \"x\"}]") }
        #expect(error?.kind == .invalid)
        #expect(error?.path == [.index(1), .key("when")])
        #expect(error?.key == "when")
        #expect(error?.reason == "is not a time")
        #expect(error?.line == 2)
    }

    @Test func decodingFromAParsedValueHasNoLine() throws {
        let value = try JSONValue.parse(#"{"name": 3}"#)
        let error = #expect(throws: JSONDecodingError.self) { try decoder.decode(Record.self, from: value) }
        #expect(error?.line == nil)
        #expect(error?.path == [.key("name")])
    }
}
