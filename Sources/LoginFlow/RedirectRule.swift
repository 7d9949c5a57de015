import Foundation
import HTTPTransport

/// The next request of a redirect chain, decided from the request sent and the 3xx answer
/// (RFC 9110 section 15.4, with the browsers' rewriting that real login flows rely on).
///
/// - 301, 302: a POST (or any method other than GET and HEAD) becomes a GET without body; GET and HEAD
///   stay as they are.
/// - 303: everything but HEAD becomes a GET without body.
/// - 307, 308: method and body are kept.
/// - `Authorization`, a `Cookie` header the step set itself, and every header built from a credential
///   (``CredentialParts``) are never carried to another origin (scheme, host or port differ), as curl and
///   Hurl do for `Authorization`; the jar adds the cookies that belong to the new URL on every hop anyway.
/// - A 307 or 308 to another origin is not followed when the body it would send again carries a
///   credential, and no redirect from https to http is followed from a request that carries one (SPEC
///   section 3): the credential would leave its origin, or travel in clear text.
/// - A relative `Location` resolves against the URL that answered; without a fragment it inherits the
///   request's (RFC 9110 section 10.2.2).
public enum RedirectRule {
    /// Why a redirect cannot be followed.
    public struct Failure: Error, Sendable, Hashable {
        public var message: String
    }

    /// Headers describing a body, removed when the body is dropped.
    static let bodyHeaders = ["Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"]
    /// Headers that carry credentials, removed when the origin changes.
    static let credentialHeaders = ["Authorization", "Cookie"]

    /// The parts of a request built from credentials: what must not leave the request's origin.
    public struct CredentialParts: Sendable, Hashable {
        /// Names of headers whose values came from a credential (lower case).
        public var headers: Set<String>
        /// Whether the body holds a credential.
        public var body: Bool

        public init(headers: Set<String> = [], body: Bool = false) {
            self.headers = Set(headers.map { $0.lowercased() })
            self.body = body
        }

        /// Nothing came from a credential.
        public static let none = CredentialParts()
    }

    /// The request to send after `response`, or a failure when its Location is unusable.
    public static func next(after request: HTTPRequest, response: HTTPResponse) throws(Failure) -> HTTPRequest {
        try next(after: request, response: response, credentials: .none).request
    }

    /// The request to send after `response` and what of it still comes from credentials, or a failure when its
    /// Location is unusable or following it would send a credential where it must not go. `credentials` says
    /// which parts of `request` came from credentials.
    public static func next(
        after request: HTTPRequest, response: HTTPResponse, credentials: CredentialParts
    ) throws(Failure) -> (request: HTTPRequest, credentials: CredentialParts) {
        guard let location = response.headers["Location"] else {
            throw Failure(message: "redirect \(response.status) without a Location header")
        }
        let target = try resolve(location, against: response.url)
        let carried = credentialHeaders.filter { request.headers.contains($0) }
            + request.headers.map(\.name).filter { credentials.headers.contains($0.lowercased()) }
        let bodyIsCredential = credentials.body && request.body != nil
        if request.url.scheme?.lowercased() == "https", target.scheme?.lowercased() == "http", !carried.isEmpty || bodyIsCredential {
            let what = bodyIsCredential && carried.isEmpty ? "its body" : "its header \(carried.first ?? "")"
            throw Failure(message: "a redirect \(response.status) from https to http (\(target.redactedForLog)) is not followed: the request "
                + "carries a credential in \(what), which must not travel in clear text")
        }
        var next = request
        next.url = target

        let method = request.method.uppercased()
        let becomesGET: Bool
        switch response.status {
        case 301, 302: becomesGET = method != "GET" && method != "HEAD"
        case 303: becomesGET = method != "HEAD"
        default: becomesGET = false
        }
        if becomesGET {
            next.method = "GET"
            next.body = nil
            for name in bodyHeaders { next.headers.remove(name: name) }
        }
        guard !sameOrigin(request.url, target) else {
            return (next, CredentialParts(headers: credentials.headers, body: credentials.body && next.body != nil))
        }
        if credentials.body && next.body != nil {
            throw Failure(message: "a redirect \(response.status) to another origin (\(target.redactedForLog)) is not followed: it would send the "
                + "request body again, and the body carries a credential")
        }
        for name in credentialHeaders { next.headers.remove(name: name) }
        for name in credentials.headers { next.headers.remove(name: name) }
        return (next, .none)
    }

    /// Resolves a Location value, percent-encoding the characters servers sometimes send raw (spaces,
    /// non-ASCII), and keeps only http and https targets.
    static func resolve(_ location: String, against base: URL) throws(Failure) -> URL {
        let trimmed = location.trimmingCharacters(in: .whitespaces)
        let candidate = URL(string: trimmed, relativeTo: base)
            ?? trimmed.addingPercentEncoding(withAllowedCharacters: locationCharacters).flatMap { URL(string: $0, relativeTo: base) }
        guard var target = candidate?.absoluteURL, let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
            target.host != nil
        else {
            throw Failure(message: "redirect to an unusable Location (only absolute or relative http(s) URLs are followed)")
        }
        if target.fragment == nil, let fragment = base.fragment,
            var components = URLComponents(url: target, resolvingAgainstBaseURL: false)
        {
            components.fragment = fragment
            target = components.url ?? target
        }
        return target
    }

    /// RFC 3986 reserved and unreserved characters plus '%': what may stay as is in a Location.
    private static let locationCharacters: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed
        set.formUnion(.urlPathAllowed)
        set.formUnion(.urlFragmentAllowed)
        set.insert(charactersIn: "%#?/:@")
        return set
    }()

    /// Same scheme, host (case-insensitive) and effective port.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        if let port = url.port { return port }
        switch url.scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }
}
