import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// `GET /api/signed`: an API call authenticated by a request signature instead of a session
/// (``RequestSignature``), as many APIs do; `plugins/sign-request.py` produces it.
struct SignedRoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.get("/api/signed") { request in self.signed(request) }
    }

    func signed(_ request: ServerRequest) -> ServerResponse {
        let header = { (name: String) in request.headers.first { $0.name.canonicalName == name.lowercased() }?.value }
        let verdict = site.requestSignature.check(
            method: request.method.rawValue, path: String(request.path), timestamp: header(RequestSignature.timestampHeader),
            signature: header(RequestSignature.signatureHeader), now: site.now())
        switch verdict {
        case .valid: return Reply.json(["signed": "ok"])
        case .missing:
            return Reply.error(.unauthorized, "\(RequestSignature.timestampHeader) and \(RequestSignature.signatureHeader) are required")
        case .stale: return Reply.error(.unauthorized, "stale signature: the timestamp is more than 300 seconds off")
        case .wrong: return Reply.error(.unauthorized, "wrong signature")
        }
    }
}
