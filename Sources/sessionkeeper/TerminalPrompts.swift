import Foundation
import LoginFlow
import Platform

/// `sessionkeeper login`'s answerer of `prompt` steps (SPEC section 12): the person at the terminal, asked on
/// standard error with echo off. Without a terminal, standard input is read to its end once (a pipe gives one
/// answer); a prompt that gets nothing fails the login saying how to answer.
final class TerminalPrompts: PromptProvider, Sendable {
    private let standardInputIsTerminal = Terminal.isTerminal(0)
    /// Runs before a question is shown, so that a progress line on the terminal does not cover it.
    private let beforeAsking: @Sendable () -> Void

    init(beforeAsking: @escaping @Sendable () -> Void = {}) {
        self.beforeAsking = beforeAsking
    }

    func answer(_ question: PromptQuestion) async throws(PromptUnanswered) -> String {
        beforeAsking()
        let isTerminal = standardInputIsTerminal
        let asked = "\(question.site), step '\(question.step)': \(question.message)\n\(question.name): "
        // Without a terminal the question is still shown: whoever feeds standard input reads it on standard error.
        if !isTerminal { Console.errRaw(asked + "(reading standard input)\n") }
        let prompt = isTerminal ? asked : ""
        // The read blocks until the person presses Enter: on its own thread, not one of the concurrency pool's.
        let read: Result<[UInt8], PromptUnanswered> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let bytes = try Terminal.readSecret(prompt: prompt)
                    continuation.resume(returning: .success(bytes))
                } catch {
                    continuation.resume(returning: .failure(.unavailable(reason: "cannot read standard input: \(error)")))
                }
            }
        }
        let bytes = try read.get()
        guard !bytes.isEmpty else {
            throw .unavailable(
                reason: isTerminal
                    ? "the answer was empty"
                    : "standard input is not a terminal and gave no answer (run login on a terminal, or pipe the answer in)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
