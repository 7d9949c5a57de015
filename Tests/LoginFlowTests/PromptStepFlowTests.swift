import CookieJar
import Foundation
import HTTPTransport
import Locking
import LoginFlow
import SiteConfig
import Testing

/// `prompt` steps in the engine (SPEC section 12): the answer of whoever answers (the daemon's slot, `login`'s
/// terminal) becomes a variable, masked as a secret however short; without an answerer, or without an answer, the
/// step fails saying so.
@Suite struct PromptStepFlowTests {
    /// Answers as a person would, and records what was asked.
    final class Person: PromptProvider, Sendable {
        let answer: Result<String, PromptUnanswered>
        let asked = Locked<[PromptQuestion]>([])

        init(_ answer: Result<String, PromptUnanswered>) { self.answer = answer }

        func answer(_ question: PromptQuestion) async throws(PromptUnanswered) -> String {
            asked.withLock { $0.append(question) }
            return try answer.get()
        }
    }

    static let prompt = Step(
        name: "code from the text message", mark: Fixture.mark,
        action: .prompt(PromptStep(name: "sms_code", message: "Code sent to the phone ending 42", timeout: .seconds(300))))

    static func site() -> SiteDefinition {
        Fixture.site([
            Fixture.step("send the code", RequestStep(method: "POST", url: Fixture.template("/login/code"))),
            prompt,
            Fixture.step("enter the code", RequestStep(
                method: "POST", url: Fixture.template("/login/code/verify"), body: .form(Fixture.named(["code": "{{ sms_code }}"])))),
        ])
    }

    static func client() -> FakeHTTPClient {
        FakeHTTPClient(routes: [
            "POST /login/code": { Fixture.response($0, body: "code sent") },
            "POST /login/code/verify": { request in
                let body = String(decoding: request.body ?? Data(), as: UTF8.self)
                return Fixture.response(request, body == "code=424242" ? 200 : 401, body: body == "code=424242" ? "welcome" : "wrong")
            },
        ])
    }

    @Test func theAnswerBecomesAVariableMaskedAsASecret() async throws {
        let client = Self.client()
        var engine = Fixture.engine(client)
        let person = Person(.success("424242"))
        engine.prompts = person
        engine.tracesExchanges = true
        let log = EventLog()
        _ = try await engine.login(Self.site(), storage: CookieStorage(), observer: log.observer)
        #expect(client.requests.map(\.url.path) == ["/login/code", "/login/code/verify"])
        let question = try #require(person.asked.withLock { $0 }.first)
        #expect(question == PromptQuestion(
            site: "test", step: "code from the text message", name: "sms_code", message: "Code sent to the phone ending 42",
            timeout: .seconds(300)))
        let traces = log.all.compactMap { if case .requestTrace(let trace) = $0 { trace } else { nil } }
        #expect(traces.last?.bodyStart == "code=\(SecretMasker.mask)", "\(traces)")
        #expect(!"\(log.all)".contains("424242"), "a six-digit answer is masked like any secret")
    }

    @Test func withoutAnAnswererThePromptFailsSayingSo() async throws {
        let client = Self.client()
        let error = try #require(await loginError(Fixture.engine(client), Self.site()))
        #expect(error.kind == .prompt && error.step == "code from the text message" && error.mark == Fixture.mark)
        #expect(error.description.contains("asks a person for 'sms_code', and nobody can answer here"), "\(error)")
        #expect(client.requests.count == 1, "nothing is sent after the prompt")
    }

    @Test func noAnswerFailsTheStepAndACancelledWaitCancelsTheRun() async throws {
        var engine = Fixture.engine(Self.client())
        engine.prompts = Person(.failure(.timedOut(.seconds(300))))
        let timedOut = try #require(await loginError(engine, Self.site()))
        #expect(timedOut.kind == .prompt)
        #expect(timedOut.description.contains("'sms_code': nobody answered within 5m"), "\(timedOut)")
        engine.prompts = Person(.failure(.cancelled))
        #expect(await loginError(engine, Self.site())?.kind == .cancelled)
    }
}
