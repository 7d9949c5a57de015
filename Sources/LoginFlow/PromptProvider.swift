import Foundation
import SiteConfig

/// What a `prompt` step asks a person (SPEC section 12). Names and the site file's message: never a value of
/// the run.
public struct PromptQuestion: Sendable, Hashable {
    public var site: String
    /// The step's name.
    public var step: String
    /// The prompt's `name`: the variable the answer becomes.
    public var name: String
    /// The prompt's `message`.
    public var message: String
    /// How long to wait for the answer.
    public var timeout: Duration

    public init(site: String, step: String, name: String, message: String, timeout: Duration) {
        self.site = site
        self.step = step
        self.name = name
        self.message = message
        self.timeout = timeout
    }
}

/// Why a prompt got no answer.
public enum PromptUnanswered: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nobody answered within the prompt's timeout.
    case timedOut(Duration)
    /// Nobody can answer here (no terminal, no daemon slot); `reason` says what to do instead.
    case unavailable(reason: String)
    /// The run was cancelled while it waited.
    case cancelled

    public var description: String {
        switch self {
        case .timedOut(let timeout): "nobody answered within \(DurationText.format(timeout))"
        case .unavailable(let reason): reason
        case .cancelled: "the run was cancelled while the prompt waited"
        }
    }
}

/// Who answers a login's `prompt` steps: the daemon (a waiting slot that `sessionkeeper answer` or the socket's
/// answer route fills), or `sessionkeeper login` (the terminal). The engine masks the answer like a credential.
public protocol PromptProvider: Sendable {
    /// The person's answer to `question`, waiting at most `question.timeout`.
    func answer(_ question: PromptQuestion) async throws(PromptUnanswered) -> String
}
