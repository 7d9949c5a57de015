import CookieJar
import Foundation
import HTTPTransport
import LoginFlow

/// Which kind of run an outcome is about: a failed login and a failed check mean different things.
public enum RunKind: Sendable, Hashable {
    case login
    case check
    case keepalive
}

/// What a login, `check` or `keepalive` run came to, in the terms the scheduler acts on (SPEC section 7).
public enum RunOutcome: Sendable, Hashable {
    /// The run succeeded.
    case ok
    /// A check or keepalive found the session gone: log in again now.
    case loggedOut(reason: String)
    /// A login was refused in a way that looks permanent (an `expect` failed on a 2xx, 3xx or 4xx answer,
    /// or the essential cookies never came): the site needs a person; do not retry until its file or a
    /// secret changes, or a refresh is asked for.
    case credentialsRefused(reason: String)
    /// The site could not be reached or answered 5xx: keep the cookies, retry the check with backoff, try
    /// no login until it answers. `retryAfter` is the server's own `Retry-After`, when it sent one.
    case siteDown(reason: String, retryAfter: Duration?)
    /// The site answered 429: wait at least `retryAfter` (when sent) before the next request.
    case rateLimited(reason: String, retryAfter: Duration?)
    /// The site file or a credential cannot work as it stands (a template names something unknown, a
    /// secret is missing, a URL is invalid): like ``credentialsRefused(reason:)``, it waits for a change.
    case misconfigured(reason: String)
    /// Any other failure (a plugin, a redirect loop, an extraction on a changed page): exponential
    /// backoff with jitter, up to `retry.max`.
    case failed(reason: String)
    /// The run was cancelled (shutdown, a site removed).
    case cancelled

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

    /// The outcome's name in logs and status (`credentials-refused`, `site-down`, …).
    public var name: String {
        switch self {
        case .ok: "ok"
        case .loggedOut: "logged-out"
        case .credentialsRefused: "credentials-refused"
        case .siteDown: "site-down"
        case .rateLimited: "rate-limited"
        case .misconfigured: "misconfigured"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    /// The failure's message (already free of secrets); nil for ok and cancelled.
    public var reason: String? {
        switch self {
        case .ok, .cancelled: nil
        case .loggedOut(let reason), .credentialsRefused(let reason), .misconfigured(let reason), .failed(let reason): reason
        case .siteDown(let reason, _), .rateLimited(let reason, _): reason
        }
    }

    /// Whether the session is known to be gone (a login is due now).
    public var sessionIsGone: Bool {
        if case .loggedOut = self { return true }
        return false
    }
}

/// The `Retry-After` response field (RFC 9110 section 10.2.3): either a number of seconds or an
/// HTTP-date.
public enum RetryAfter {
    /// The longest delay taken from a server, so a hostile or broken value cannot park a site for years.
    public static let maximumDelay: Duration = .seconds(7 * 24 * 3600)

    /// The delay a `Retry-After` value asks for, measured from `now`; nil when the value is neither form.
    /// A date in the past means no delay.
    public static func delay(from value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        guard !text.isEmpty else { return nil }
        // delay-seconds = 1*DIGIT
        if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // More digits than a week's seconds can have is the maximum, without overflowing.
            guard text.utf8.count <= 9, let seconds = Int64(text) else { return maximumDelay }
            return min(.seconds(seconds), maximumDelay)
        }
        // HTTP-date: IMF-fixdate, or the obsolete RFC 850 and asctime forms recipients must accept
        // (RFC 9110 section 5.6.7); the jar's date parser (RFC 6265 section 5.1.1) reads all three.
        guard text.contains(where: \.isLetter), let date = CookieDateParser.parse(text) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds > 0 else { return .zero }
        return min(.milliseconds(Int64((seconds * 1000).rounded(.up))), maximumDelay)
    }
}
