import Foundation
import Testing

@testable import XMLQuery

/// XPath contexts are reused across documents: nothing of one evaluation may show in the next.
@Suite struct ContextReuseTests {
    static func page(_ token: String) -> String {
        """
        <html><body><form id="login" action="/login"><input type="hidden" name="csrf" value="\(token)">
        <input name="user"></form><p>one</p><p>two</p></body></html>
        """
    }

    @Test func resultsAndErrorsDoNotLeakBetweenDocuments() throws {
        for round in 0..<(XPathContextPool.capacity * 3) {
            let document = try Document.html(Self.page("token-\(round)"))
            #expect(try document.firstString("//form[@id='login']//input[@name='csrf']/@value") == "token-\(round)")
            #expect(try document.evaluate("count(//p)") == .number(2))
            // A fresh context has no context size or position (-1): libxml2 refuses these the same way each time.
            #expect(throws: XMLQueryError.self) { try document.evaluate("position()") }
            #expect(throws: XMLQueryError.self) { try document.evaluate("last()") }
            #expect(try document.evaluate("count(//p[position() = last()])") == .number(1))
            #expect(throws: XMLQueryError.self) { try document.evaluate("//p[") }
            #expect(throws: XMLQueryError.self) { try document.evaluate("nosuchfunction()") }
            #expect(try document.strings("//p/text()") == ["one", "two"])
            let form = try document.form("//form[@id='login']", pageURL: URL(string: "https://example.com/a/b")!)
            #expect(form.fields.first { $0.name == "csrf" }?.value == "token-\(round)")
        }
    }

    @Test func concurrentDocumentsEachSeeTheirOwnNodes() async throws {
        let values = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<64 {
                group.addTask {
                    let document = try Document.html(Self.page("t\(index)"))
                    return (index, try document.firstString("//input[@name='csrf']/@value"))
                }
            }
            var values: [Int: String?] = [:]
            for try await (index, value) in group { values[index] = value }
            return values
        }
        for index in 0..<64 { #expect(values[index] == .some("t\(index)")) }
    }
}
