import Foundation
import Locking

/// A site file for the demo site's form login (the CSRF token from the form, a 303 carrying
/// `demo_session`), checked every second with `GET /api/me` unless `checked` is false; `extra` YAML is appended. The daemon's and the
/// socket's tests keep sites with it.
///
/// - Parameter checked: with the check of `/api/me` every second; without, nothing but a client's request can
///   find the session dead.
public func demoSiteLoginYAML(baseURL: URL, extra: String = "", checked: Bool = true) -> String {
    """
    base_url: \(baseURL.absoluteString)
    credentials: {username: alice, password: {env: DEMO_PASSWORD}}
    login:
      steps:
        - name: login page
          get: /login
          extract: {csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}}
        - name: submit
          post: /login
          form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
          follow_redirects: false
          expect: {status: 303, cookie: demo_session}
    \(checked ? "check: {get: /api/me, expect: {status: 200}, every: 1s}" : "")
    cookies: {essential: [demo_session]}
    \(extra)
    """
}

/// A site file for the demo site's sign-in with a code sent out of band (`/login/code`, SPEC section 12's `prompt`
/// step): the password, then the code a person reads (`/_control/sent-code`) given as `sms_code`, then the code
/// checked. `extra` is appended (refresh, check, access).
public func demoSiteCodeLoginYAML(baseURL: URL, timeout: String, extra: String = "") -> String {
    """
    base_url: \(baseURL.absoluteString)
    credentials: {username: alice, password: {env: DEMO_PASSWORD}}
    login:
      steps:
        - name: send the code
          post: /login/code
          form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}"}
          expect: {status: 200}
        - name: code from the text message
          prompt: {name: sms_code, message: "Code sent to the phone ending 42", timeout: \(timeout)}
        - name: enter the code
          post: /login/code/verify
          form: {code: "{{ sms_code }}"}
          follow_redirects: false
          expect: {status: 303, cookie: demo_session}
    cookies: {essential: [demo_session]}
    \(extra)
    """
}

/// Counts events by key (a server's requests by `METHOD path`, say), from any thread.
public final class KeyCounter: Sendable {
    private let counts = Locked<[String: Int]>([:])

    public init() {}

    public func add(_ key: String) { counts.withLock { $0[key, default: 0] += 1 } }

    public func count(_ key: String) -> Int { counts.withLock { $0[key] ?? 0 } }
}
