import Foundation
import Testing

@testable import XMLQuery

/// Compiled XPath expressions are kept per expression text and lent to one evaluation at a time: a reused
/// one gives each document its own answer, and failures stay failures.
@Suite struct CompiledExpressionReuseTests {
    static func page(_ token: String, paragraphs: Int) -> String {
        let body = (0..<paragraphs).map { "<p class=\"c\($0 % 2)\">p\($0)</p>" }.joined()
        return "<html><body><form id=\"login\"><input name=\"csrf\" value=\"\(token)\"></form>\(body)</body></html>"
    }

    @Test func reusedExpressionsAnswerForEachDocument() throws {
        let expressions = [
            "//form[@id='login']//input[@name='csrf']/@value", "count(//p)", "concat(//p[1], '-', //p[last()])",
            "normalize-space(//p[@class='c1'][1])", "string-length(//input/@value)", "//p[position() = 2]/text()",
        ]
        for round in 0..<20 {
            let document = try Document.html(Self.page("token-\(round)", paragraphs: round + 2))
            #expect(try document.firstString(expressions[0]) == "token-\(round)")
            #expect(try document.evaluate(expressions[1]) == .number(Double(round + 2)))
            #expect(try document.firstString(expressions[2]) == "p0-p\(round + 1)")
            #expect(try document.firstString(expressions[3]) == "p1")
            #expect(try document.evaluate(expressions[4]) == .number(Double("token-\(round)".count)))
            #expect(try document.firstString(expressions[5]) == "p1")
        }
    }

    @Test func moreExpressionsThanTheCacheKeepsStillEvaluate() throws {
        let document = try Document.html(Self.page("t", paragraphs: 3))
        for round in 0..<2 {
            for index in 0..<(CompiledXPathPool.expressionCapacity + 40) {
                #expect(try document.evaluate("count(//p) + \(index)") == .number(Double(3 + index)), "round \(round)")
            }
        }
    }

    @Test func failuresStayFailures() throws {
        let document = try Document.html(Self.page("t", paragraphs: 1))
        for _ in 0..<5 {
            #expect(throws: XMLQueryError.self) { try document.evaluate("//p[") }
            #expect(throws: XMLQueryError.self) { try document.evaluate("nosuchfunction()") }
            // Compiles, then fails while evaluating: the kept copy fails the same way the next time.
            #expect(throws: XMLQueryError.self) { try document.evaluate("position()") }
            #expect(try document.evaluate("count(//p)") == .number(1))
        }
    }

    @Test func oneExpressionEvaluatedConcurrentlyOnManyDocuments() async throws {
        let expression = "concat(//input[@name='csrf']/@value, ':', count(//p))"
        let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<64 {
                group.addTask {
                    var last: String?
                    for _ in 0..<20 {
                        let document = try Document.html(Self.page("t\(index)", paragraphs: index % 5 + 1))
                        last = try document.firstString(expression)
                    }
                    return (index, last)
                }
            }
            var answers: [Int: String?] = [:]
            for try await (index, answer) in group { answers[index] = answer }
            return answers
        }
        for index in 0..<64 { #expect(answers[index] == .some("t\(index):\(index % 5 + 1)")) }
    }

    @Test func dataAndStringInputParseAlike() throws {
        let text = Self.page("tok", paragraphs: 4) + "<p>é 中</p>"
        let fromData = try Document.html(Data(text.utf8), encoding: "utf-8")
        let fromString = try Document.html(text)
        #expect(try fromData.strings("//p") == fromString.strings("//p"))
        let empty = try Document.html(Data())
        #expect(try empty.evaluate("count(//html)") == .number(1))
    }
}
