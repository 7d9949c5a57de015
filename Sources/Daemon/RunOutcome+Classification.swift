import Foundation
import HTTPTransport
import LoginFlow
import Scheduler
import Sessions

extension RunOutcome {
    /// Classifies a failed run. A pure function of the error: the status class and transport kind decide,
    /// in this order: cancellation, transport failures, 429, 5xx, then what the flow said.
    public static func classify(_ error: FlowError, run: RunKind, now: Date) -> RunOutcome {
        let reason = error.description
        if case .cancelled = error.kind { return .cancelled }
        if case .transport(let kind) = error.kind {
            return classify(transport: kind, reason: reason)
        }
        if let response = error.response {
            let retryAfter = response.retryAfter.flatMap { RetryAfter.delay(from: $0, now: now) }
            // RFC 9110 section 15.5.1 / RFC 6585 section 4: the client sent too many requests.
            if response.status == 429 { return .rateLimited(reason: reason, retryAfter: retryAfter) }
            // RFC 9110 section 15.6: the server failed; nothing about the session can be concluded.
            if (500...599).contains(response.status) { return .siteDown(reason: reason, retryAfter: retryAfter) }
        }
        switch error.kind {
        case .expectationFailed, .essentialCookieMissing:
            return run == .login ? .credentialsRefused(reason: reason) : .loggedOut(reason: reason)
        case .extractionFailed, .redirect:
            return run == .login ? .failed(reason: reason) : .loggedOut(reason: reason)
        case .template, .credential, .invalidRequest:
            return .misconfigured(reason: reason)
        case .plugin:
            return .failed(reason: reason)
        case .prompt:
            return .promptTimedOut(reason: reason)
        case .transport(let kind):
            return classify(transport: kind, reason: reason)
        case .cancelled:
            return .cancelled
        }
    }

    /// A request that got no response.
    static func classify(transport kind: TransportError.Kind, reason: String) -> RunOutcome {
        switch kind {
        case .dns, .connect, .tls, .timeout, .proxy, .protocolError, .interrupted:
            .siteDown(reason: reason, retryAfter: nil)
        case .cancelled:
            .cancelled
        case .invalidRequest:
            .misconfigured(reason: reason)
        case .bodyTooLarge, .requestBody, .other:
            .failed(reason: reason)
        }
    }
}
