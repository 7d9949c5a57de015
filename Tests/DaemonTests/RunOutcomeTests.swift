import Daemon
import Foundation
import HTTPTransport
import LoginFlow
import Scheduler
import Testing

/// The outcome table: every transport error kind and every status class, for a login and for a check.
@Suite struct RunOutcomeTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    /// The shape of an outcome, without its human-readable reason.
    enum Shape: Hashable, CustomStringConvertible {
        case ok, loggedOut, credentialsRefused, siteDown(Duration?), rateLimited(Duration?), misconfigured, failed, promptTimedOut, cancelled

        init(_ outcome: RunOutcome) {
            switch outcome {
            case .ok: self = .ok
            case .loggedOut: self = .loggedOut
            case .credentialsRefused: self = .credentialsRefused
            case .siteDown(_, let delay): self = .siteDown(delay)
            case .rateLimited(_, let delay): self = .rateLimited(delay)
            case .misconfigured: self = .misconfigured
            case .failed: self = .failed
            case .promptTimedOut: self = .promptTimedOut
            case .cancelled: self = .cancelled
            }
        }

        var description: String {
            switch self {
            case .ok: "ok"
            case .loggedOut: "logged-out"
            case .credentialsRefused: "credentials-refused"
            case .siteDown(let delay): "site-down(\(delay.map { "\($0)" } ?? "-"))"
            case .rateLimited(let delay): "rate-limited(\(delay.map { "\($0)" } ?? "-"))"
            case .misconfigured: "misconfigured"
            case .failed: "failed"
            case .promptTimedOut: "prompt-timed-out"
            case .cancelled: "cancelled"
            }
        }
    }

    static func classify(_ error: FlowError, _ run: RunKind) -> Shape {
        Shape(RunOutcome.classify(error, run: run, now: now))
    }

    static func transport(_ kind: TransportError.Kind) -> FlowError {
        FlowError(kind: .transport(kind), site: "wiki", step: "login page", detail: "no answer")
    }

    static func answered(_ kind: FlowError.Kind, status: Int, retryAfter: String? = nil) -> FlowError {
        FlowError(
            kind: kind, site: "wiki", step: "submit", expected: "status 303", found: "status \(status)",
            response: FlowError.ResponseSummary(status: status, url: "https://wiki.example.com/login", retryAfter: retryAfter))
    }

    @Test(arguments: [
        (TransportError.Kind.dns, Shape.siteDown(nil)),
        (.connect, .siteDown(nil)),
        (.tls, .siteDown(nil)),
        (.timeout, .siteDown(nil)),
        (.proxy, .siteDown(nil)),
        (.protocolError, .siteDown(nil)),
        (.interrupted, .siteDown(nil)),
        (.bodyTooLarge, .failed),
        (.requestBody, .failed),
        (.invalidRequest, .misconfigured),
        (.cancelled, .cancelled),
        (.other, .failed),
    ])
    func everyTransportErrorKind(kind: TransportError.Kind, expected: Shape) {
        // A request that got no answer means the same for a login as for a check.
        #expect(Self.classify(Self.transport(kind), .login) == expected)
        #expect(Self.classify(Self.transport(kind), .check) == expected)
        #expect(Self.classify(Self.transport(kind), .keepalive) == expected)
    }

    @Test(arguments: [200, 204, 302, 303, 400, 401, 403, 404, 409, 418])
    func aFailedExpectationOnA2xx3xxOr4xxIsRefusedForALoginAndLoggedOutForACheck(status: Int) {
        #expect(Self.classify(Self.answered(.expectationFailed, status: status), .login) == .credentialsRefused)
        #expect(Self.classify(Self.answered(.expectationFailed, status: status), .check) == .loggedOut)
        #expect(Self.classify(Self.answered(.expectationFailed, status: status), .keepalive) == .loggedOut)
        #expect(Self.classify(Self.answered(.essentialCookieMissing, status: status), .login) == .credentialsRefused)
        #expect(Self.classify(Self.answered(.essentialCookieMissing, status: status), .check) == .loggedOut)
    }

    @Test(arguments: [500, 501, 502, 503, 504, 599])
    func a5xxIsSiteDownWhateverTheFlowSaid(status: Int) {
        for kind in [FlowError.Kind.expectationFailed, .extractionFailed, .essentialCookieMissing, .redirect] {
            #expect(Self.classify(Self.answered(kind, status: status), .login) == .siteDown(nil))
            #expect(Self.classify(Self.answered(kind, status: status), .check) == .siteDown(nil))
        }
    }

    @Test func a429IsRateLimitedWithTheServersDelayInBothForms() {
        #expect(Self.classify(Self.answered(.expectationFailed, status: 429), .login) == .rateLimited(nil))
        #expect(Self.classify(Self.answered(.expectationFailed, status: 429, retryAfter: "120"), .check) == .rateLimited(.seconds(120)))
        let date = "Sun, 15 Jun 2025 15:16:40 GMT"  // now + 600 s
        #expect(Self.classify(Self.answered(.expectationFailed, status: 429, retryAfter: date), .login) == .rateLimited(.seconds(600)))
    }

    @Test func a503WithRetryAfterIsSiteDownForThatLong() {
        #expect(Self.classify(Self.answered(.expectationFailed, status: 503, retryAfter: "30"), .check) == .siteDown(.seconds(30)))
    }

    @Test func whatTheFlowSaidDecidesTheRest() {
        let missingPlugin = FlowError(kind: .plugin, site: "wiki", step: "second factor", detail: "exit 1")
        #expect(Self.classify(missingPlugin, .login) == .failed)
        #expect(Self.classify(Self.answered(.extractionFailed, status: 200), .login) == .failed)
        #expect(Self.classify(Self.answered(.extractionFailed, status: 200), .check) == .loggedOut)
        #expect(Self.classify(Self.answered(.redirect, status: 302), .login) == .failed)
        #expect(Self.classify(FlowError(kind: .template, site: "wiki", step: "submit"), .login) == .misconfigured)
        #expect(Self.classify(FlowError(kind: .credential, site: "wiki", step: "submit"), .login) == .misconfigured)
        #expect(Self.classify(FlowError(kind: .invalidRequest, site: "wiki", step: "submit"), .check) == .misconfigured)
        #expect(Self.classify(FlowError(kind: .cancelled, site: "wiki"), .login) == .cancelled)
        // A prompt nobody answered: the site needs a person, not a retry.
        #expect(Self.classify(FlowError(kind: .prompt, site: "wiki", step: "code", detail: "nobody answered within 15m"), .login) == .promptTimedOut)
        // A login plugin that returned no essential cookie: no response to look at.
        #expect(Self.classify(FlowError(kind: .essentialCookieMissing, site: "wiki", step: "login"), .login) == .credentialsRefused)
        #expect(Self.classify(FlowError(kind: .essentialCookieMissing, site: "wiki", step: "check"), .check) == .loggedOut)
    }

    @Test func theReasonIsTheErrorsMessage() {
        let error = Self.answered(.expectationFailed, status: 200)
        guard case .credentialsRefused(let reason) = RunOutcome.classify(error, run: .login, now: Self.now) else {
            Issue.record("not credentials-refused")
            return
        }
        #expect(reason == error.description)
    }
}
