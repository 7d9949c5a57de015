import Foundation
import SiteConfig

// MARK: Prompt steps: a person's answer inside a login (SPEC section 12)

extension FlowEngine {
    /// Asks ``prompts`` for the answer to `prompt` and makes it the variable `prompt.name`, masked as a credential
    /// is. No answer (a timeout, nobody who can answer) fails the step with ``FlowError/Kind/prompt``; a cancelled
    /// wait fails it as cancelled.
    func ask(_ prompt: PromptStep, name: String, mark: SourceMark, state: inout RunState) async throws(FlowError) -> StepTiming {
        let started = ContinuousClock.now
        let site = state.site.name
        guard let prompts else {
            throw FlowError(
                kind: .prompt, site: site, step: name, mark: mark,
                detail: "the step asks a person for '\(prompt.name)', and nobody can answer here")
        }
        let question = PromptQuestion(site: site, step: name, name: prompt.name, message: prompt.message, timeout: prompt.timeout)
        let answer: String
        do {
            answer = try await prompts.answer(question)
        } catch {
            if case .cancelled = error { throw FlowError(kind: .cancelled, site: site, step: name, detail: error.description) }
            throw FlowError(kind: .prompt, site: site, step: name, mark: mark, detail: "'\(prompt.name)': \(error)")
        }
        try checkCancellation(site: site, step: name)
        state.setSecretVariable(prompt.name, answer)
        return StepTiming(step: name, duration: ContinuousClock.now - started, requests: 0, status: nil)
    }
}
