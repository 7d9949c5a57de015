import Testing
@testable import SiteConfig

@Suite struct TemplateTests {
    @Test func parsesPlaceholdersAndLiterals() throws {
        let template = try Template(parsing: "user={{ credentials.username }}&csrf={{csrf}}&again={{ csrf }}")
        #expect(template.variables == ["credentials.username", "csrf"])
        #expect(template.segments.first == .literal("user="))
        let rendered = template.render { name in name == "csrf" ? "T" : "alice" }
        #expect(rendered == "user=alice&csrf=T&again=T")
    }

    @Test func literalTemplateHasNoVariables() throws {
        let template = try Template(parsing: "/login")
        #expect(template.isLiteral)
        #expect(template.render { _ in "x" } == "/login")
        #expect(Template(literal: "{{ x }}").render { _ in "y" } == "{{ x }}")
    }

    @Test(arguments: ["{{ csrf", "a {{ }} b", "{{ 1abc }}", "{{ a..b }}", "{{ a b }}"])
    func rejectsMalformedPlaceholders(_ text: String) {
        #expect(throws: TemplateError.self) { try Template(parsing: text) }
    }

    @Test func renderPropagatesLookupErrors() throws {
        struct Missing: Error {}
        let template = try Template(parsing: "{{ nope }}")
        #expect(throws: Missing.self) { try template.render { _ throws(Missing) in throw Missing() } }
    }
}

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("10m", .seconds(600)),
        ("12h", .seconds(43_200)), ("7d", .seconds(604_800)), ("1h30m", .seconds(5_400)), ("1.5s", .milliseconds(1500)),
    ])
    func parses(_ text: String, _ expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(arguments: ["", "30", "s", "10 parsecs", "-5s", "1e3s", "999999999d"])
    func rejects(_ text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test func formatsShortest() {
        #expect(DurationText.format(.seconds(90)) == "1m30s")
        #expect(DurationText.format(.milliseconds(500)) == "500ms")
        #expect(DurationText.format(.seconds(0)) == "0s")
    }
}
