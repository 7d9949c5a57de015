import Foundation
import Testing
import XMLQuery

@Suite struct DocumentTests {
    static let page = """
        <!DOCTYPE html>
        <html><head><title>Sign in</title><meta name="csrf-token" content="tok-123"></head>
        <body>
          <h1>  Welcome,
             alice </h1>
          <p class=error>Invalid <b>username</b> or password
          <ul><li>one<li>two<li>three</ul>
          <a href="/a">A</a><a href='/b'>B</a>
        </body></html>
        """

    @Test func attributeValues() throws {
        let document = try Document.html(Self.page)
        #expect(try document.firstString("//meta[@name='csrf-token']/@content") == "tok-123")
        #expect(try document.strings("//a/@href") == ["/a", "/b"])
    }

    @Test func textContentOfElementsIncludesDescendants() throws {
        let document = try Document.html(Self.page)
        #expect(try document.firstString("//p[@class='error']")?.hasPrefix("Invalid username or password") == true)
        #expect(try document.strings("//li") == ["one", "two", "three"])
    }

    @Test func scalarResults() throws {
        let document = try Document.html(Self.page)
        #expect(try document.evaluate("count(//li)") == .number(3))
        #expect(try document.firstString("count(//li)") == "3")
        #expect(try document.firstString("count(//li) div 2") == "1.5")
        #expect(try document.evaluate("boolean(//p[@class='error'])") == .boolean(true))
        #expect(try document.firstString("boolean(//form)") == "false")
        #expect(try document.firstString("normalize-space(//h1)") == "Welcome, alice")
        #expect(try document.evaluate("string(//title)") == .string("Sign in"))
    }

    @Test func emptySelectionHasNoFirstValue() throws {
        let document = try Document.html(Self.page)
        #expect(try document.firstString("//table") == nil)
        #expect(try document.evaluate("//table") == .nodes([]))
    }

    @Test func brokenHTMLStillParses() throws {
        let document = try Document.html("<div><p>unclosed <span>tags<div>and <b>more")
        #expect(try document.firstString("//b") == "more")
        let empty = try Document.html(Data())
        #expect(try empty.firstString("//body") == nil)
    }

    @Test func htmlWithoutCharsetIsReadAsUTF8() throws {
        let document = try Document.html(Data("<p>café – ü</p>".utf8))
        #expect(try document.firstString("//p") == "café – ü")
    }

    @Test func declaredCharsetIsHonoured() throws {
        var bytes = Data("<html><head><meta charset=\"iso-8859-1\"></head><body><p>caf".utf8)
        bytes.append(0xE9)
        bytes.append(contentsOf: Array("</p></body></html>".utf8))
        #expect(try Document.html(bytes).firstString("//p") == "café")
        #expect(try Document.html(bytes, encoding: "ISO-8859-1").firstString("//p") == "café")
    }

    @Test func xmlDocuments() throws {
        let xml = Data("<?xml version=\"1.0\"?><r><user id=\"7\"><name>alice</name></user></r>".utf8)
        let document = try Document.xml(xml)
        #expect(document.kind == .xml)
        #expect(try document.firstString("/r/user/@id") == "7")
        #expect(try document.firstString("//name") == "alice")
    }

    @Test func malformedXMLIsAnError() {
        #expect {
            _ = try Document.xml(Data("<r><unclosed></r>".utf8))
        } throws: { error in
            (error as? XMLQueryError)?.kind == .parse
        }
    }

    @Test func xmlNeverLoadsExternalEntities() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xmlquery-secret-\(getpid()).txt")
        try "top-secret-file-content".write(to: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: path) }
        let xml = """
            <?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "\(path.absoluteString)">]><r>&x;</r>
            """
        let text = try? Document.xml(Data(xml.utf8)).firstString("/r")
        #expect(text?.contains("top-secret") != true)
    }

    @Test func invalidExpressionIsATypedError() throws {
        let document = try Document.html(Self.page)
        #expect {
            _ = try document.evaluate("//a[")
        } throws: { error in
            guard let error = error as? XMLQueryError else { return false }
            return error.kind == .xpath && error.description.contains("//a[")
        }
    }

    @Test func documentsAreIndependentAcrossTasks() async throws {
        try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<16 {
                group.addTask {
                    try Document.html("<p id='x'>value \(index)</p>").firstString("//p[@id='x']")
                }
            }
            var seen = Set<String>()
            for try await value in group { seen.insert(try #require(value)) }
            #expect(seen.count == 16)
        }
    }
}
