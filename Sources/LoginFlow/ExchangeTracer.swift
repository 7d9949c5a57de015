import CookieJar
import Foundation
import HTTPTransport

/// Builds the masked ``FlowEvent`` traces of `login -vv`: what was sent and received, and what the jar
/// did with each cookie. Cookie values never appear (a `Cookie` or `Set-Cookie` header keeps its names
/// and attributes only), `Authorization` keeps its scheme only, and everything else goes through the
/// run's ``SecretMasker``.
enum ExchangeTracer {
    static let masked = "<masked>"

    static func request(_ request: HTTPRequest, site: String, step: String, masker: SecretMasker) -> FlowEvent.Trace {
        let body = request.body ?? Data()
        return FlowEvent.Trace(
            site: site, step: step, method: request.method, url: request.url.redactedForLog, status: 0,
            headers: headers(request.headers, masker: masker), bodyStart: bodyStart(body, masker: masker),
            bodyLength: body.count)
    }

    static func response(_ response: HTTPResponse, site: String, step: String, masker: SecretMasker) -> FlowEvent.Trace {
        FlowEvent.Trace(
            site: site, step: step, method: "", url: response.url.redactedForLog, status: response.status,
            headers: headers(response.headers, masker: masker), bodyStart: bodyStart(response.body, masker: masker),
            bodyLength: response.body.count)
    }

    /// One trace per decision, then one per cookie the response removed from the jar.
    static func cookies(
        _ decisions: [CookieDecision], before: [Cookie], after: [Cookie], site: String, step: String
    ) -> [FlowEvent.CookieTrace] {
        var traces: [FlowEvent.CookieTrace] = []
        var touched = Set<String>()
        for decision in decisions {
            switch decision {
            case .stored(let cookie):
                touched.insert(identity(cookie))
                traces.append(FlowEvent.CookieTrace(site: site, step: step, name: cookie.name, scope: scope(cookie), outcome: .stored))
            case .rejected(let name, let reason):
                traces.append(FlowEvent.CookieTrace(site: site, step: step, name: name, scope: nil, outcome: .refused(reason: reason)))
            }
        }
        let remaining = Set(after.map(identity))
        for cookie in before where !remaining.contains(identity(cookie)) {
            let reason = touched.contains(identity(cookie)) || decisions.isEmpty
                ? "the server deleted it (an expiry in the past)"
                : "the jar was over its cookie limits (cookies.limits), so the least recently used cookie was dropped"
            traces.append(FlowEvent.CookieTrace(site: site, step: step, name: cookie.name, scope: scope(cookie), outcome: .evicted(reason: reason)))
        }
        return traces
    }

    private static func identity(_ cookie: Cookie) -> String { "\(cookie.name)\u{0}\(cookie.domain)\u{0}\(cookie.path)" }

    private static func scope(_ cookie: Cookie) -> String { "\(cookie.hostOnly ? "" : ".")\(cookie.domain)\(cookie.path)" }

    private static func headers(_ headers: HTTPHeaders, masker: SecretMasker) -> [FlowEvent.Trace.Header] {
        headers.map { field in
            FlowEvent.Trace.Header(name: field.name, value: maskedValue(name: field.name, value: field.value, masker: masker))
        }
    }

    static func maskedValue(name: String, value: String, masker: SecretMasker) -> String {
        switch name.lowercased() {
        case "cookie":
            // "a=1; b=2" -> "a=<masked>; b=<masked>": which cookies were sent is what a site author needs.
            return value.split(separator: ";").map { pair in
                let name = pair.split(separator: "=", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                return "\(name)=\(masked)"
            }.joined(separator: "; ")
        case "set-cookie":
            // The name and the attributes (Domain, Path, Expires...) stay; the value goes.
            let parts = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts.first.flatMap { $0.split(separator: "=", maxSplits: 1).first }.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            let attributes = parts.count > 1 ? ";" + masker.redact(String(parts[1])) : ""
            return "\(name)=\(masked)\(attributes)"
        case "authorization", "proxy-authorization":
            let scheme = value.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
            return scheme.isEmpty || scheme == value ? masked : "\(scheme) \(masked)"
        default:
            return masker.redact(value)
        }
    }

    private static func bodyStart(_ body: Data, masker: SecretMasker) -> String {
        guard !body.isEmpty else { return "" }
        // Mask the whole decoded start before cutting, so a secret across the cut cannot leave its first half.
        let start = String(decoding: body.prefix(FlowEngine.traceBodyLength * 4), as: UTF8.self)
        let redacted = masker.redact(start)
        return redacted.count > FlowEngine.traceBodyLength ? String(redacted.prefix(FlowEngine.traceBodyLength)) + "…" : redacted
    }
}
