import Foundation

/// A small but realistic web application that SessionKeeper's tests, benchmarks and README log into:
/// a login form with a CSRF token, a session cookie with a fixed or sliding Max-Age, a protected page and
/// JSON API, logout and server-side revocation, an optional TOTP second factor, a redirect chain across
/// two host names, and a "down" switch. `CONTRACTS.md` section 3 and `docs/DEMO.md` list the routes.
///
/// Build its listener (a `Service` on ``HTTPServer``) with ``buildApplication(configuration:now:requestLog:onServerRunning:)``,
/// or run it on a socket with
/// ``start(configuration:now:requestLog:)``, which returns once the server listens and tells its port.
public enum DemoSite {
    /// The wall clock the site reads for session expiry, `expires_at` and TOTP steps; tests pass a
    /// settable one so expiry and one-time codes are checked without sleeping.
    public typealias WallClock = @Sendable () -> Date
}
