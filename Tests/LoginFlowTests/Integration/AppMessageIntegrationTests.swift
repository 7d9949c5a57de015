import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import TestSupport
import Testing

/// Issue 40: a refused login's error quotes the app's own message, found as a person finds it, not the page's head.
@Suite struct AppMessageIntegrationTests {
    static func siteYAML(port: Int, step: String) -> String {
        """
        base_url: http://127.0.0.1:\(port)
        credentials: {password: {env: UNUSED}}
        login:
          steps:
            - name: submit
        \(step)
        cookies: {essential: [sessionid]}
        """
    }

    @Test func aRefusedSignInOnADjangoShapedPageQuotesTheErrorList() async throws {
        try await Integration.withOddServer { port, client in
            let password = "typed-Pw-77"
            let site = try Integration.site(Self.siteYAML(port: port, step: """
                      post: /accounts/login/
                      form: {login: alice, password: "{{ credentials.password }}", echo: "{{ credentials.password }}"}
                      follow_redirects: false
                      expect: {status: 302}
                """))
            let engine = Integration.engine(client, credentials: ["password": password])
            let error = await #expect(throws: FlowError.self) { _ = try await engine.login(site, storage: CookieStorage()) }
            let response = try #require(error?.response)
            // The message sits halfway down a page whose first 200 characters are all head.
            #expect(response.appMessage == "The username and/or password you specified are not correct. (•••)")
            #expect(response.appMessageIsTitle == false)
            #expect(!response.bodyExcerpt.contains("not correct"))
            let text = try #require(error.map { "\($0)" })
            #expect(text.contains("step 'submit'"))
            #expect(text.contains(#"the site says "The username and/or password you specified are not correct. (•••)""#))
            #expect(text.contains("[last response: 200 http://127.0.0.1:\(port)/accounts/login/]"))
            #expect(!text.contains(password))
            #expect(!text.contains("<!DOCTYPE"))
            // A notification's summary never carries the page's words.
            #expect(error?.summary.contains("not correct") == false)
        }
    }

    @Test func aJSONRefusalQuotesItsFirstErrorsDetail() async throws {
        try await Integration.withOddServer { port, client in
            let site = try Integration.site(Self.siteYAML(port: port, step: """
                      post: /api/refused
                      json: {password: "{{ credentials.password }}"}
                      expect: {status: 200}
                """))
            let engine = Integration.engine(client, credentials: ["password": "x-Pw-12345"])
            let error = await #expect(throws: FlowError.self) { _ = try await engine.login(site, storage: CookieStorage()) }
            #expect(error?.response?.appMessage == "Invalid credentials given.")
            #expect(error.map { "\($0)" }?.contains(#"the site says "Invalid credentials given.""#) == true)
        }
    }

    @Test func aPageWithNoMarkedMessageFallsBackToItsTitle() async throws {
        try await Integration.withOddServer { port, client in
            let site = try Integration.site(Self.siteYAML(port: port, step: """
                      get: /page
                      expect: {status: 201}
                """))
            let error = await #expect(throws: FlowError.self) { _ = try await Integration.engine(client).login(site, storage: CookieStorage()) }
            #expect(error?.response?.appMessage == "Odd page")
            #expect(error?.response?.appMessageIsTitle == true)
            #expect(error.map { "\($0)" }?.contains(#"page title: "Odd page""#) == true)
        }
    }
}
