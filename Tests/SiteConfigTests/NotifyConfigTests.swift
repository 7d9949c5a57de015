import Foundation
@testable import SiteConfig
import Testing

/// config.yaml's `notify:` (SPEC section 12): webhooks with a format, headers and events, commands; every
/// mistake at file:line:column, with "did you mean" where a name is close.
@Suite struct NotifyConfigTests {
    static let file = "/etc/sk/config.yaml"

    static func problems(_ text: String) -> [String] {
        do {
            _ = try loader.loadConfig(text: text, file: file)
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test func webhooksAndCommandsAreReadWithTheirDefaults() throws {
        let config = try loader.loadConfig(text: """
            notify:
              - webhook: https://alerts.example.com/api/v2/alerts
                format: alertmanager
                headers: {Authorization: {env: ALERT_TOKEN}, X-Team: ops}
                events: [needs-attention, recovered]
              - webhook: https://ntfy.sh/sessionkeeper-alerts
                format: ntfy
                answer_url: "https://phone.example/answer?site={{ site }}&prompt={{ prompt }}"
                timeout: 30s
              - command: [notify-send, SessionKeeper]
              - command: [./hooks/tell.sh, --urgent]
            """, file: Self.file)
        #expect(config.notify.count == 4)
        guard case .webhook(let alertmanager) = config.notify[0].target, case .webhook(let ntfy) = config.notify[1].target else {
            Issue.record("not webhooks: \(config.notify)")
            return
        }
        #expect(alertmanager.url.absoluteString == "https://alerts.example.com/api/v2/alerts" && alertmanager.format == .alertmanager)
        #expect(alertmanager.headers == [
            NotifierHeader(name: "Authorization", value: .environment("ALERT_TOKEN")), NotifierHeader(name: "X-Team", value: .literal("ops")),
        ])
        #expect(config.notify[0].events == [.needsAttention, .recovered])
        #expect(config.notify[0].timeout == .seconds(10))
        #expect(config.notify[0].mark?.line == 2)
        #expect(ntfy.format == .ntfy && ntfy.answerURL?.variables == ["site", "prompt"])
        #expect(config.notify[1].events == [.waitingForPerson, .needsAttention, .recovered] && config.notify[1].timeout == .seconds(30))
        #expect(config.notify[2].target == .command(["notify-send", "SessionKeeper"]))
        #expect(config.notify[3].target == .command(["/etc/sk/hooks/tell.sh", "--urgent"]))
        #expect(try loader.loadConfig(text: "state_dir: s\n", file: Self.file).notify.isEmpty)
    }

    @Test func mistakesAreReportedWhereTheyAreWithSuggestions() {
        let found = Self.problems("""
            notify:
              - webhook: https://alerts.example.com/hook
                format: alertmanger
                evnts: [recovered]
              - webhook: https://a.example/x
                command: [true]
              - format: json
              - webhook: ftp://files.example/
              - webhook: https://ntfy.sh/
                format: ntfy
              - webhook: https://hooks.example/h
                headers: {"Bad Name": x, Content-Type: text/plain, X-Token: {env: "not a name"}, X-Other: {secret: x}}
                events: [needs-attention, needs-attention, recoverd]
                answer_url: "https://a.example/{{ sites }}"
                timeout: 10m
              - command: []
                format: json
              - webhook: https://hooks.example/h
                events: []
            """)
        let expected = [
            "3:13: error: notify[0].format: unknown value 'alertmanger'; did you mean 'alertmanager'?",
            "4:5: error: unknown key 'evnts'; did you mean 'events'?",
            "5:5: error: notify[1]: give either a webhook or a command, not both (write two entries)",
            "7:5: error: notify[2]: give a webhook (a URL) or a command (a list: the program and its arguments)",
            "8:14: error: notify[3].webhook: 'ftp://files.example/' is not an absolute http:// or https:// URL",
            "9:14: error: notify[4].webhook: an ntfy URL ends with the topic (letters, digits, '-' and '_', at most 64), such as https://ntfy.sh/mytopic",
            "12:15: error: notify[5].headers: 'Bad Name' is not a header name",
            "12:30: error: notify[5].headers: Content-Type is set by the webhook request itself",
            "12:71: error: notify[5].headers.X-Token.env: 'not a name' is not an environment variable name",
            "12:95: error: notify[5].headers.X-Other: give a value, or {env: NAME} for an environment variable",
            "12:96: error: unknown key 'secret' (expected one of: env)",
            "13:31: error: notify[5].events: needs-attention is listed twice",
            "13:48: error: notify[5].events: unknown value 'recoverd'; did you mean 'recovered'?",
            "14:17: error: notify[5].answer_url: unknown variable 'sites'; did you mean 'site'?",
            "15:14: error: notify[5].timeout: 10m is longer than 5m",
            "16:14: error: notify[6].command: give the program and its arguments as a list, such as [notify-send, SessionKeeper]",
            "17:13: error: notify[6].format applies to a webhook, not to a command",
            "19:13: error: notify[7].events is empty; leave it out to be told of every event",
        ].map { "\(Self.file):" + $0 }
        for line in expected { #expect(found.contains(line), "missing: \(line)\nfound:\n\(found.joined(separator: "\n"))") }
        #expect(found.count == expected.count, "\(found.joined(separator: "\n"))")
    }

    @Test func checkNeverEchoesTheLinesOfNotifyWhichHoldSecrets() throws {
        let text = """
            notify:
              - webhook: https://hooks.example/services/T0/B0/very-secret-hook
                headers: {Authorization: "Bearer very-secret-token"}
                format: jsn
            """
        do {
            _ = try loader.loadConfig(text: text, file: Self.file)
            Issue.record("the config loaded")
        } catch {
            #expect(error.sensitiveLines.isSuperset(of: [2, 3, 4]))
            let rendered = DiagnosticRenderer(showSource: true).render(error, source: text).joined(separator: "\n")
            #expect(rendered.contains("did you mean 'json'?"))
            #expect(!rendered.contains("very-secret"), "\(rendered)")
        }
    }
}
