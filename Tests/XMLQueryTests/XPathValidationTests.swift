import Testing
import XMLQuery

@Suite struct XPathValidationTests {
    @Test(arguments: [
        "//form[@id='login']//input[@name='csrf']/@value",
        "count(//a)",
        "string(/html/head/title)",
        "//meta[@name='csrf-token']/@content",
        "boolean(//div[contains(@class, 'error')])",
        "normalize-space(//h1)",
    ])
    func validExpressionsPass(expression: String) {
        #expect(XPath.validate(expression) == nil)
    }

    @Test(arguments: ["//form[", "///", "//a[@href=", "count(//a", "//*[@x='1']]"])
    func syntaxErrorsAreReported(expression: String) throws {
        let message = try #require(XPath.validate(expression))
        #expect(message.contains(expression))
        #expect(!message.isEmpty)
    }

    @Test func unknownFunctionIsReported() throws {
        let message = try #require(XPath.validate("no-such-function(//a)"))
        #expect(message.hasPrefix("Unregistered function"))
    }

    @Test func unboundVariableIsReported() {
        #expect(XPath.validate("concat('a', $missing)")?.hasPrefix("Undefined variable") == true)
    }

    @Test func messageNamesTheProblemAndWhere() {
        #expect(XPath.validate("//form[") == "Invalid expression at offset 7 in '//form['")
    }

    @Test func emptyExpressionIsReported() {
        #expect(XPath.validate("   ") == "empty XPath expression")
    }
}
