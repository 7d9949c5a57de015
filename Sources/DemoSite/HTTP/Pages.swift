import Foundation

/// The site's HTML pages: small, well-formed, and shaped like a real sign-in page (labels, autocomplete
/// hints, an error in a `role="alert"` paragraph), so XPath and form extraction meet what they meet in
/// the wild.
enum Pages {
    static func login(csrf: String, next: String?, error: String?, padding: String = "") -> String {
        let nextField = next.map { "\n      <input type=\"hidden\" name=\"next\" value=\"\(escape($0))\">" } ?? ""
        return document(
            title: "Sign in",
            body: """
                <h1>Sign in</h1>\(alert(error))
                    <form id="login" method="post" action="/login">
                      <input type="hidden" name="csrf" value="\(escape(csrf))">\(nextField)
                      <label for="username">Username</label>
                      <input type="text" id="username" name="username" autocomplete="username">
                      <label for="password">Password</label>
                      <input type="password" id="password" name="password" autocomplete="current-password">
                      <button type="submit">Sign in</button>
                    </form>
                    <p><a href="/sso/start">Sign in with SSO</a></p>\(padding)
                """
        )
    }

    /// About `bytes` bytes of the markup a portal puts around its sign-in form (a list of linked news items),
    /// so a parser meets many elements, attributes and text nodes; "" for 0.
    static func padding(bytes: Int) -> String {
        guard bytes > 0 else { return "" }
        var markup = "\n    <ul class=\"news\">"
        var item = 0
        while markup.utf8.count < bytes {
            item += 1
            markup += "\n      <li class=\"item\"><a href=\"/news/\(item)\" title=\"News item \(item)\">Portal news item \(item)</a>"
                + " <span class=\"date\">2026-11-21</span> <em>maintenance &amp; updates</em></li>"
        }
        return markup + "\n    </ul>"
    }

    static func totp(csrf: String, error: String?) -> String {
        document(
            title: "Two-factor authentication",
            body: """
                <h1>Two-factor authentication</h1>\(alert(error))
                    <p>Enter the 6-digit code from your authenticator app.</p>
                    <form id="totp" method="post" action="/login/totp">
                      <input type="hidden" name="csrf" value="\(escape(csrf))">
                      <label for="code">Code</label>
                      <input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6">
                      <button type="submit">Verify</button>
                    </form>
                """
        )
    }

    static func account(user: String, expiresAt: String) -> String {
        document(
            title: "Your account",
            body: """
                <h1>Welcome, \(escape(user))</h1>
                    <p id="session-expiry">Your session expires at <time datetime="\(expiresAt)">\(expiresAt)</time>.</p>
                    <form id="logout" method="post" action="/logout">
                      <button type="submit">Sign out</button>
                    </form>
                """
        )
    }

    /// The JavaScript sign-in's page: nothing but a mount point and the script that builds the form.
    static func appLogin() -> String {
        document(
            title: "Sign in to the app",
            body: """
                <h1>Sign in to the app</h1>
                    <div id="app"><noscript>This sign-in needs JavaScript.</noscript></div>
                    <script src="/app/login.js"></script>
                """
        )
    }

    static func appHome(user: String) -> String {
        document(title: "App", body: "<h1 id=\"app-home\">Signed in to the app as \(escape(user))</h1>")
    }

    /// The identity provider's consent page: the form a site file answers with `form_from` (Django OAuth
    /// Toolkit's id, `authorizationForm`), its fields hidden but `allow`.
    static func consent(csrf: String, client: String, user: String, authorization: ProviderRoutes.Authorization) -> String {
        document(
            title: "Authorize",
            body: """
                <h1>Authorize \(escape(client))?</h1>
                    <p>Signed in as \(escape(user)). The application \(escape(client)) asks to know who you are.</p>
                    <form id="authorizationForm" method="post" action="/authorize">
                      <input type="hidden" name="csrf" value="\(escape(csrf))">
                      <input type="hidden" name="response_type" value="code">
                      <input type="hidden" name="client_id" value="\(escape(client))">
                      <input type="hidden" name="redirect_uri" value="\(escape(authorization.redirectURI))">
                      <input type="hidden" name="state" value="\(escape(authorization.state))">
                      <button type="submit" name="allow" value="Authorize">Authorize</button>
                    </form>
                """
        )
    }

    static func message(title: String, text: String) -> String {
        document(title: title, body: "<h1>\(escape(title))</h1>\n    <p>\(escape(text))</p>")
    }

    private static func alert(_ error: String?) -> String {
        error.map { "\n    <p class=\"error\" role=\"alert\">\(escape($0))</p>" } ?? ""
    }

    private static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
          <head>
            <meta charset="utf-8">
            <title>\(escape(title)) · Demo</title>
          </head>
          <body>
            \(body)
          </body>
        </html>

        """
    }

    /// HTML escaping for text and double-quoted attribute values.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
