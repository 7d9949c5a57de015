import Foundation
import Testing
@testable import SiteConfig

/// `when:` on a login step and `done_when:` on the login (SPEC section 3): what they build, and where a
/// misplaced or misspelled one is refused (file:line:column).
@Suite struct ConditionalStepTests {
    static let flow = """
        base_url: https://app.example.com
        login:
          done_when: {url_matches: "/private/$", body_contains: Signed in}
          steps:
            - name: start
              get: /oidc/start
            - name: provider login
              when: {url_matches: "/idp/login", body_contains: "<form"}
              form_from: {xpath: "//form[@id='login']"}
              form: {username: alice}
            - name: consent
              when: {status: 200, body_contains: authorizationForm}
              prompt: {name: answer, message: Approve the app}
        """

    @Test func whenAndDoneWhenTakeTheKeysOfExpect() throws {
        let built = try site(Self.flow)
        guard case .steps(let steps) = built.login else {
            Issue.record("no steps")
            return
        }
        #expect(steps[0].when == nil)
        #expect(steps[1].when?.map(\.kind) == [.urlMatches("/idp/login"), .bodyContains("<form")])
        #expect(steps[2].when?.map(\.kind) == [.status([200]), .bodyContains("authorizationForm")])
        #expect(steps[2].prompt != nil, "a prompt step may be conditional too")
        #expect(built.doneWhen.map(\.kind) == [.urlMatches("/private/$"), .bodyContains("Signed in")])
        #expect(built.doneWhen.first?.mark.map { "\($0.line):\($0.column)" } == "3:28")
    }

    @Test func aSiteWithoutThemRunsEveryStep() throws {
        let built = try site("""
            base_url: https://app.example.com
            login: {steps: [{get: /login}]}
            """)
        #expect(built.doneWhen.isEmpty)
        guard case .steps(let steps) = built.login else { return }
        #expect(steps.allSatisfy { $0.when == nil })
    }

    @Test(arguments: [
        ("""
        base_url: https://app.example.com
        login:
          steps:
            - get: /login
              when: {status: 200}
        """, "5:7: step 1: 'when' judges the previous response, and the first step has none"),
        ("""
        base_url: https://app.example.com
        login:
          steps:
            - get: /login
            - get: /next
              when: {url_match: /login}
        """, "6:14: unknown key 'url_match'; did you mean 'url_matches'?"),
        ("""
        base_url: https://app.example.com
        login:
          steps:
            - get: /login
            - get: /next
              optional: true
        """, "6:7: unknown key 'optional'"),
        ("""
        base_url: https://app.example.com
        login:
          steps:
            - get: /login
            - get: /next
              when: {status: 700}
        """, "6:22: step 2.when.status: 700 is not an HTTP status (100-599)"),
        ("""
        base_url: https://app.example.com
        login: {steps: [{get: /login}]}
        check: {get: /me, when: {status: 200}}
        """, "3:19: check: 'when' applies only to login steps"),
        ("""
        base_url: https://app.example.com
        login:
          plugin: login.py
          done_when: {status: 200}
        """, "4:3: login.done_when applies only to a login with steps"),
        ("""
        base_url: https://app.example.com
        login:
          done_when: {body: Welcome}
          steps: [{get: /login}]
        """, "3:15: unknown key 'body' (expected one of: status, url_matches"),
    ])
    func aMisplacedOrMisspelledConditionIsRefusedWithItsPlace(text: String, expected: String) {
        let found = problems(text).map { "\($0.mark.line):\($0.mark.column): \($0.message)" }
        #expect(found.contains { $0.hasPrefix(expected) }, "\(found)")
    }
}
