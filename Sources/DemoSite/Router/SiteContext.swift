import Foundation
import HTTPServer
import HTTPTypes
import NIOCore
import Locking

/// Which of the two host names a request was sent to.
enum HostRole: Sendable {
    case main, sso
}

/// What every route handler shares: configuration, store, token signer, clock.
final class SiteContext: Sendable {
    let configuration: DemoSite.Configuration
    let store: DemoSiteState
    let csrf = CSRFTokens()
    /// Nonces of the JavaScript sign-in (`/app/...`).
    let challenges = BrowserChallenges()
    /// The check of `GET /api/signed`, under the configured signing key.
    let requestSignature: RequestSignature
    let totp: TOTPVerifier?
    let now: DemoSite.WallClock
    /// `--login-page-padding`'s markup, made once.
    let loginPagePadding: String
    /// The port the server listens on, once it does (redirects across hosts need it).
    let boundPort = Locked<Int?>(nil)
    /// The identity provider's port (`--idp-host`), once it listens.
    let providerPort = Locked<Int?>(nil)

    init(configuration: DemoSite.Configuration, totpSecret: [UInt8]?, now: @escaping DemoSite.WallClock) {
        self.configuration = configuration
        self.store = DemoSiteState(now: now)
        self.requestSignature = RequestSignature(key: configuration.signingKey)
        self.totp = totpSecret.map { TOTPVerifier(secret: $0, driftSteps: configuration.totpDrift) }
        self.now = now
        self.loginPagePadding = Pages.padding(bytes: configuration.loginPagePadding)
    }

    /// The `Host` header (HTTP/1.1) or `:authority` (what HTTPTypes moves it to), split into name and port.
    func host(of request: ServerRequest) -> (name: String, port: Int?) {
        if let header = request.headers.first(where: { $0.name.canonicalName == "host" })?.value { return HostName.split(header) }
        return HostName.split(request.head.authority ?? "")
    }

    func role(of request: ServerRequest) -> HostRole {
        host(of: request).name == configuration.ssoHost.lowercased() ? .sso : .main
    }

    /// The port to put in cross-host redirects: the one the client used, else the one bound, else the configured one.
    func publicPort(for request: ServerRequest) -> Int {
        host(of: request).port ?? boundPort.withLock { $0 } ?? configuration.port
    }

    /// The live session of a request: the `demo_session` cookie, or an `Authorization: Bearer` token
    /// (the `token` that `/api/login` returns).
    func session(of request: ServerRequest) async -> Session? {
        if let cookie = request.cookie(SiteCookie.session), !cookie.isEmpty,
            let session = await store.session(id: cookie)
        {
            return session
        }
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") {
            let token = authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
            if !token.isEmpty { return await store.session(id: token) }
        }
        return nil
    }

    /// Checks a user name and password without revealing through timing which one was wrong.
    func credentialsMatch(user: String, password: String) -> Bool {
        let userMatches = constantTimeEquals(user, configuration.user)
        let passwordMatches = constantTimeEquals(password, configuration.password)
        return userMatches && passwordMatches
    }

    /// A posted form's fields once its CSRF field matches its cookie (checked first, so a forged post learns
    /// nothing); else the answer to send instead: 413 for a body over the limit, 403 for a failed check.
    func csrfCheckedForm(_ request: ServerRequest) async -> Result<[String: String], FormRefusal> {
        let fields: [String: String]
        do {
            fields = RequestBodyReader.formFields(try await RequestBodyReader.collect(request))
        } catch {
            return .failure(FormRefusal(response: Reply.text(.contentTooLarge, "ServerRequest body too large")))
        }
        guard csrf.check(field: fields["csrf"], cookie: request.cookie(SiteCookie.csrf)) else {
            return .failure(FormRefusal(response: Reply.html(Pages.message(title: "Forbidden", text: "CSRF check failed"), status: .forbidden)))
        }
        return .success(fields)
    }

    /// The answer to a form ``csrfCheckedForm(_:)`` refused.
    struct FormRefusal: Error {
        let response: ServerResponse
    }

    /// A `next` target for after login: only a local absolute path, so the login page is no open redirect.
    static func safeNext(_ value: String?) -> String? {
        guard let value, value.hasPrefix("/"), !value.hasPrefix("//"), !value.contains("\\"),
            value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
        else { return nil }
        return value
    }
}
