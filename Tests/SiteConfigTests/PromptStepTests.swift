import Foundation
import Testing
@testable import SiteConfig

/// `prompt` steps (SPEC section 12): what a valid one builds, and the warning for a prompt that may outlast the
/// session it replaces. The broken ones are in BrokenFilesTests (`prompt-*.yaml`).
@Suite struct PromptStepTests {
    static func site(_ steps: String, refresh: String = "") throws -> SiteDefinition {
        try loader.loadSite(
            text: """
                base_url: https://bank.example.com
                login:
                  steps:
                \(steps)
                \(refresh)
                """,
            file: "/sites/bank.yaml", config: fixtureConfig())
    }

    @Test func aPromptBecomesAStepWhoseNameLaterStepsUse() throws {
        let site = try Self.site("""
                - name: code from the text message
                  prompt: {name: sms_code, message: "  Code sent to the phone ending 42 ", timeout: 5m}
                - name: enter the code
                  post: /login/code/verify
                  form: {code: "{{ sms_code }}"}
                - prompt: {name: approval, message: Approve the sign-in on your phone}
            """)
        guard case .steps(let steps) = site.login else {
            Issue.record("no steps")
            return
        }
        #expect(steps.map(\.name) == ["code from the text message", "enter the code", "step 3"])
        #expect(steps[0].prompt == PromptStep(name: "sms_code", message: "Code sent to the phone ending 42", timeout: .seconds(300)))
        #expect(steps[0].request == nil && steps[0].plugin == nil)
        #expect(steps[2].prompt?.timeout == PromptStep.defaultTimeout)
        #expect(site.warnings.isEmpty, "\(site.warnings)")
    }

    @Test func aPromptThatMayOutlastBeforeExpiryIsWarnedAbout() throws {
        let site = try Self.site("""
                - name: code
                  prompt: {name: sms_code, message: Code sent to the phone, timeout: 30m}
            """, refresh: "refresh: {before_expiry: 10m}")
        #expect(site.warnings.map(\.severity) == [.warning])
        let message = try #require(site.warnings.first?.message)
        #expect(message.contains("step 'code': the prompt waits up to 30m, longer than refresh.before_expiry (10m)"), "\(message)")
        #expect(site.warnings.first.map { "\($0.mark.line):\($0.mark.column)" } == "4:7")
    }

    @Test func aReservedOrOverlongPromptIsRefused() throws {
        for (prompt, expected) in [
            ("{name: credentials, message: Code}", "step 1.prompt.name: 'credentials' is reserved"),
            ("{name: code, message: \"\(String(repeating: "x", count: 501))\"}", "step 1.prompt.message is longer than 500 characters"),
            ("{name: code, message: \"   \"}", "step 1.prompt.message is empty; say what the person is asked"),
            ("{message: Code}", "step 1.prompt needs 'name' (the variable later steps use, such as sms_code)"),
        ] {
            #expect {
                try Self.site("    - prompt: \(prompt)")
            } throws: { error in
                "\(error)".contains(expected)
            }
        }
    }
}
