import Testing
@testable import SiteConfig

@Suite struct DiagnosticRendererTests {
    let text = "base_url: https://a.example\ncredentials:\n  password: hunter2-secret\n  password: again-secret\nlogin: manul\n"

    func error() -> ConfigError {
        do {
            _ = try loader.loadSite(text: text, file: "/tmp/sites/wiki.yaml", config: fixtureConfig())
        } catch {
            return error
        }
        Issue.record("the text is broken on purpose")
        return ConfigError([])
    }

    @Test func plainLinesForPipes() {
        let lines = DiagnosticRenderer(showSource: false).render(error(), source: text)
        #expect(lines == [
            "/tmp/sites/wiki.yaml:4:3: error: duplicate key 'password' (first defined at line 3)",
            "/tmp/sites/wiki.yaml:5:8: error: login: 'manul' is not a login; write 'manual' or a mapping with 'steps:' or 'plugin:'",
        ])
    }

    @Test func sourceLineAndCaretOnATerminalWithCredentialsRedacted() {
        let renderer = DiagnosticRenderer(showSource: true, displayPath: { $0.replacingOccurrences(of: "/tmp/", with: "") })
        let lines = renderer.render(error(), source: text)
        #expect(lines == [
            "sites/wiki.yaml:4:3: error: duplicate key 'password' (first defined at line 3)",
            "      password: <redacted>",
            "      ^",
            "sites/wiki.yaml:5:8: error: login: 'manul' is not a login; write 'manual' or a mapping with 'steps:' or 'plugin:'",
            "    login: manul",
            "           ^",
        ])
        #expect(!lines.joined().contains("secret"))
    }
}
