import Daemon
import Foundation
import HTTPServer
import JSON

// MARK: POST /v1/sites/NAME/answer?name=V: a person's answer to a waiting prompt (SPEC section 12)

extension APIRoutes {
    /// The body is the value (one trailing newline dropped, so `echo 123456 | curl --data-binary @-` works); it
    /// goes to the waiting login alone, never to a log or an answer. 409 when no prompt (of that name) waits.
    func answerPrompt(_ request: ServerRequest, _ context: APIContext) async throws -> ServerResponse {
        let snapshot = try await visibleSite(context)
        try requireManager(context, to: "answer the prompts of site '\(snapshot.site.name)'")
        let prompt = try RouteQuery(request, for: .answer).name
        let value = Self.answerValue(try await bodyText(request))
        guard !value.isEmpty else { throw APIError(.badRequest, .badRequest, "the body is empty: it carries the answer") }
        let answered: String
        do {
            answered = try await keeper.answer(snapshot.site.name, prompt: prompt, value: value)
        } catch {
            throw APIError(error)
        }
        logger.info("a prompt was answered over the socket", metadata: [
            "site": "\(snapshot.site.name)", "prompt": "\(answered)", "uid": "\(context.peer.uid)",
        ])
        return WireBody.json(.object([("status", .string("answered")), ("prompt", .string(answered))]))
    }

    /// The answer in a body: without one trailing newline (`\n` or `\r\n`).
    static func answerValue(_ body: String) -> String {
        var value = Substring(body)
        if value.hasSuffix("\n") { value = value.dropLast() }
        if value.hasSuffix("\r") { value = value.dropLast() }
        return String(value)
    }
}
