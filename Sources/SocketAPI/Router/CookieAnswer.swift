import CookieJar
import Daemon
import Foundation
import HTTPServer
import Sessions

/// The answer to `GET /v1/sites/NAME/cookies` for a session fit to serve.
struct CookieAnswer: Sendable {
    /// The body.
    var text: String
    var contentType: String

    /// - Parameters:
    ///   - url: with it, only the cookies a request to `url` carries, by the jar's rules (RFC 6265 section 5.4).
    ///     Without it, every host's cookies, except in the `header` format, which is one request's Cookie header:
    ///     then the cookies a request to the site's `base_url` carries (an identity provider's cookies of the
    ///     same names stay out).
    ///   - now: the wall clock cookies are judged by.
    init(_ served: ServedSession, format: CookieFormat, url requested: URL?, now: @escaping @Sendable () -> Date) {
        let instant = now()
        var cookies = served.record.liveCookies(at: instant)
        let url = requested ?? (format == .header ? served.site.baseURL : nil)
        if let url {
            let storage = SiteJar.makeStorage(for: served.site, clock: now)
            for cookie in cookies { storage.setCookie(cookie) }
            cookies = storage.cookies(for: url)
        }
        // A browser login's localStorage goes with the cookies (only `playwright` has a place for it); with
        // `url`, only that URL's origin's.
        let origins = requested.map { url in served.record.origins.filter { $0.isOrigin(of: url) } } ?? served.record.origins
        let encoded = CookieCodec.encode(cookies, as: format, origins: origins)
        switch format {
        case .header:
            text = encoded + "\n"
            contentType = "text/plain; charset=utf-8"
        case .json, .playwright:
            text = encoded
            contentType = "application/json"
        case .netscape, .setCookie:
            text = encoded
            contentType = "text/plain; charset=utf-8"
        }
    }

    /// The answer as the route sends it.
    var response: ServerResponse { WireBody.text(text, contentType: contentType) }
}
