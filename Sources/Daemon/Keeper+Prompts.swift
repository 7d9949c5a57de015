import Foundation
import LoginFlow
import Logging
import Scheduler
import SiteConfig

// MARK: Prompts: a login that waits for a person's answer (SPEC section 12)

/// A login's prompt waiting in the keeper for its answer.
struct WaitingPrompt {
    var id: UInt64
    var request: PromptRequest
    var continuation: CheckedContinuation<Result<String, PromptUnanswered>, Never>
    /// Ends the wait when the prompt's timeout passes on the keeper's clock.
    var timer: Task<Void, Never>
}

/// The daemon's answerer of one site's `prompt` steps: the running login asks the ``Keeper``, which makes the
/// site waiting-for-person (notified through its events) and waits for ``Keeper/answer(_:prompt:value:)``.
struct KeeperPrompts: PromptProvider {
    let keeper: Keeper
    let site: String

    func answer(_ question: PromptQuestion) async throws(PromptUnanswered) -> String {
        try await keeper.ask(question, site: site).get()
    }
}

extension Keeper {
    /// Waits for a person's answer to `question`, asked by `site`'s running login: the site is waiting-for-person
    /// until ``answer(_:prompt:value:)`` gives the value, the prompt's timeout passes on the keeper's clock, or the
    /// login is cancelled (shutdown, the site removed).
    func ask(_ question: PromptQuestion, site name: String) async -> Result<String, PromptUnanswered> {
        guard !stopped, entries[name] != nil else { return .failure(.cancelled) }
        nextID &+= 1
        let id = nextID
        let request = PromptRequest(
            name: question.name, message: question.message,
            expiresAt: wallClock().addingTimeInterval(Double(question.timeout.components.seconds)))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // One login runs per site, so a prompt still here belongs to a run that is over.
                endPrompt(of: name, with: .failure(.cancelled))
                let deadline = clock.now + question.timeout
                // Unstructured: the timer outlives this step; it is kept with the prompt and cancelled when it ends.
                let timer = Task { [clock] in
                    do {
                        try await clock.sleep(until: deadline, tolerance: nil)
                    } catch {
                        return
                    }
                    // The task runs on the keeper (it was made there), so this is a plain call.
                    self.promptTimedOut(id, of: name, after: question.timeout)
                }
                waitingPrompts[name] = WaitingPrompt(id: id, request: request, continuation: continuation, timer: timer)
                logger.info("a login waits for a person's answer", metadata: [
                    "site": "\(name)", "step": "\(question.step)", "prompt": "\(question.name)",
                    "timeout": "\(DurationText.format(question.timeout))",
                ])
                dispatch(.promptWaiting(request), to: name)
                // A person may take minutes: the login's place among max_concurrent_logins goes to other sites.
                gate.finish(site: name)
                admitLogins()
                rearm()
            }
        } onCancel: {
            // Unstructured: a cancellation handler is synchronous and runs off the keeper; the keeper is reached by a hop.
            Task { await self.endPrompt(id, of: name, with: .failure(.cancelled)) }
        }
    }

    /// A person's answer to the prompt `site`'s login waits on (`sessionkeeper answer`, `POST .../answer`). With
    /// `prompt`, only the prompt of that name is answered. The value goes to the login alone: never logged, never
    /// kept here.
    /// - Returns: the name of the prompt answered.
    public func answer(_ site: String, prompt: String?, value: String) throws(ClientRequestError) -> String {
        guard entries[site] != nil else { throw .unknownSite(site) }
        guard let waiting = waitingPrompts[site] else { throw .noPrompt(site, asked: prompt, waiting: nil) }
        if let prompt, prompt != waiting.request.name { throw .noPrompt(site, asked: prompt, waiting: waiting.request.name) }
        logger.info("a prompt was answered", metadata: ["site": "\(site)", "prompt": "\(waiting.request.name)"])
        dispatch(.promptAnswered, to: site)
        endPrompt(waiting.id, of: site, with: .success(value))
        rearm()
        return waiting.request.name
    }

    func promptTimedOut(_ id: UInt64, of name: String, after timeout: Duration) {
        guard waitingPrompts[name]?.id == id else { return }
        logger.warning("nobody answered the prompt in time", metadata: [
            "site": "\(name)", "prompt": "\(waitingPrompts[name]?.request.name ?? "-")", "timeout": "\(DurationText.format(timeout))",
        ])
        endPrompt(id, of: name, with: .failure(.timedOut(timeout)))
    }

    /// Ends the wait of prompt `id` of `name` (when it still waits) with `result`.
    func endPrompt(_ id: UInt64, of name: String, with result: Result<String, PromptUnanswered>) {
        guard waitingPrompts[name]?.id == id else { return }
        endPrompt(of: name, with: result)
    }

    /// Ends the wait of whatever prompt `name`'s login waits on with `result`.
    func endPrompt(of name: String, with result: Result<String, PromptUnanswered>) {
        guard let waiting = waitingPrompts.removeValue(forKey: name) else { return }
        waiting.timer.cancel()
        waiting.continuation.resume(returning: result)
    }
}
