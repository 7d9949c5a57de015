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

/// HTML parser contexts are reused: a page parses to the same tree as with a context of its own.
@Suite struct ParserReuseTests {
    static let pages: [String] = [
        "<p>unclosed <b>bold <i>both</p> after",
        "<table><tr><td>a<td>b<tr><td>c</table><p><div>x</p></div>",
        "<script>if (a < b && c > d) { x = '</p>' }</script><p id=q>ok",
        "<!DOCTYPE html><html lang=en><head><meta charset=\"utf-8\"><title>t</title></head><body>é ü 中</body></html>",
        "<?xml version=\"1.0\" encoding=\"iso-8859-1\"?><html><body>caf\u{E9}</body></html>",
        "<form action=/x><input name=a value=1><select name=s><option selected>o</select><textarea name=t>x</textarea>",
        "<p>entities &amp; &lt; &copy; &unknown; &#x41; &#66;</p><!-- comment --><![CDATA[ x ]]>",
        "<custom-element data-x=1><svg><circle r=1/></svg></custom-element><p>tail",
        "plain text only", "<", "<<<>>> & </p></p></p>", "\u{FEFF}<p>bom</p>",
    ]

    static func shape(_ document: Document) throws -> [String] {
        try document.strings("//*") + document.strings("//@*") + document.strings("//comment()")
            + [try document.evaluate("count(//node())").first ?? ""]
    }

    @Test func pooledParsesMatchFreshOnes() throws {
        for round in 0..<(HTMLParserPool.maxUses + 20) {
            for (index, page) in Self.pages.enumerated() where round < 2 || index == round % Self.pages.count {
                for encoding in [nil, "utf-8", "iso-8859-1"] as [String?] {
                    let bytes = Array(page.utf8)
                    let pooled = try Document.html(bytes, url: nil, encoding: encoding)
                    let fresh = try Document.html(bytes, url: nil, encoding: encoding, pooled: false)
                    #expect(try Self.shape(pooled) == Self.shape(fresh), "page \(index), encoding \(encoding ?? "none")")
                }
            }
        }
    }

    @Test func documentsOutliveLaterParses() throws {
        let first = try Document.html(Array("<p id=a>first</p>".utf8), url: nil, encoding: nil)
        let later = try (0..<40).map { try Document.html(Array("<p id=b\($0)>later</p>".utf8), url: nil, encoding: nil) }
        #expect(try first.strings("//p/@id") == ["a"])
        #expect(try later.last?.strings("//p/@id") == ["b39"])
    }
}
