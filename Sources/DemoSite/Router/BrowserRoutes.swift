import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// A sign-in that only a browser can complete: `GET /app/login` is an empty page whose script builds the
/// form; on submit the script fetches a nonce from `GET /app/challenge`, computes a proof from it
/// (``BrowserChallenges/proof(nonce:user:)``) and posts JSON to `POST /app/session`, which sets
/// `demo_session`; the script then keeps the user name in localStorage, sets a cookie of its own
/// (`demo_app_seen`) and goes to `GET /app/home`, the protected page.
struct BrowserRoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.get("/app/login") { _ in Reply.html(Pages.appLogin()) }
        router.get("/app/login.js") { _ in Reply.javaScript(Self.script) }
        router.get("/app/challenge") { _ in Reply.json(["nonce": self.site.challenges.issue(at: self.site.now())]) }
        router.post("/app/session") { request in await self.signIn(request) }
        router.get("/app/home") { request in await self.home(request) }
    }

    /// Nonce and proof first (a scripted client fails there, whatever it knows), then the password. This
    /// sign-in has no second factor: with TOTP on it is refused.
    func signIn(_ request: ServerRequest) async -> ServerResponse {
        let body: ByteBuffer
        do {
            body = try await RequestBodyReader.collect(request)
        } catch {
            return Reply.error(.contentTooLarge, "request body too large")
        }
        guard let attempt = try? JSONDecoder().decode(AppSignIn.self, from: Data(buffer: body)) else {
            return Reply.error(.badRequest, "body must be a JSON object with string fields username, password, nonce and proof")
        }
        guard site.challenges.isValid(attempt.nonce, at: site.now()) else {
            return Reply.error(.badRequest, "invalid or expired challenge")
        }
        guard constantTimeEquals(BrowserChallenges.proof(nonce: attempt.nonce, user: attempt.username), attempt.proof.lowercased()) else {
            return Reply.error(.badRequest, "wrong proof")
        }
        guard site.totp == nil else { return Reply.error(.forbidden, "the JavaScript sign-in has no second factor; use /login") }
        guard site.credentialsMatch(user: attempt.username, password: attempt.password) else {
            await site.store.recordFailedLogin()
            return Reply.error(.unauthorized, "invalid username or password")
        }
        let maxAge = site.configuration.sessionMaxAge
        let session = await site.store.createSession(user: site.configuration.user, maxAge: maxAge)
        return Reply.json(AppSignedIn(next: "/app/home", user: session.user), cookies: [SiteCookie.session(session.id, maxAge: maxAge)])
    }

    func home(_ request: ServerRequest) async -> ServerResponse {
        guard let session = await site.session(of: request) else { return Reply.redirect(.found, to: "/app/login") }
        return Reply.html(Pages.appHome(user: session.user))
    }

    /// The page's script: builds the form, and on submit fetches the challenge, computes the proof and
    /// signs in. FNV-1a with Math.imul, as ``BrowserChallenges/proof(nonce:user:)`` computes it.
    static let script = """
        "use strict";
        (function () {
          function proof(nonce, user) {
            var bytes = new TextEncoder().encode(nonce + ":" + user), hash = 0x811c9dc5;
            for (var i = 0; i < bytes.length; i++) { hash = Math.imul(hash ^ bytes[i], 0x01000193) >>> 0; }
            return ("0000000" + hash.toString(16)).slice(-8);
          }
          var app = document.getElementById("app");
          app.innerHTML =
            '<form id="app-login">' +
            '<label for="username">Username</label> <input id="username" autocomplete="username"> ' +
            '<label for="password">Password</label> <input id="password" type="password" autocomplete="current-password"> ' +
            '<button id="sign-in" type="submit">Sign in</button>' +
            '<p id="status" role="alert"></p></form>';
          var status = document.getElementById("status");
          document.getElementById("app-login").addEventListener("submit", function (event) {
            event.preventDefault();
            var user = document.getElementById("username").value;
            var password = document.getElementById("password").value;
            status.textContent = "Signing in…";
            fetch("/app/challenge", { credentials: "same-origin" })
              .then(function (answer) { return answer.json(); })
              .then(function (challenge) {
                return fetch("/app/session", {
                  method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
                  body: JSON.stringify({ username: user, password: password, nonce: challenge.nonce, proof: proof(challenge.nonce, user) })
                });
              })
              .then(function (answer) { return answer.json().then(function (body) { return { ok: answer.ok, body: body }; }); })
              .then(function (result) {
                if (!result.ok) { status.textContent = result.body.error || "Sign-in failed"; return; }
                localStorage.setItem("demo_app_user", result.body.user);
                document.cookie = "demo_app_seen=1; Path=/; Max-Age=86400; SameSite=Lax";
                window.location.assign(result.body.next);
              })
              .catch(function () { status.textContent = "The site cannot be reached"; });
          });
        })();

        """
}

struct AppSignIn: Decodable, Sendable {
    let username: String
    let password: String
    let nonce: String
    let proof: String
}

struct AppSignedIn: Encodable, Sendable {
    let next: String
    let user: String
}
