/// Resolves a site's named credentials at login time (SPEC section 3, `credentials:`). The CLI and the
/// daemon adapt the Credentials module to it; tests use a dictionary.
///
/// Values are secrets: the engine masks them in every message it produces.
public protocol CredentialProvider: Sendable {
    /// The value of credential `name` of site `site`. Errors must not contain the value.
    func value(of name: String, site: String) async throws -> String

    /// What credential `name` of site `site` is: a value fixed for the whole run, or a one-time code the engine
    /// computes when the request carrying it is built (a TOTP credential). Called before the first request, so a
    /// missing secret fails at once. The default is ``value(of:site:)`` as a fixed value.
    func credential(named name: String, site: String) async throws -> ResolvedCredential
}

extension CredentialProvider {
    public func credential(named name: String, site: String) async throws -> ResolvedCredential {
        .fixed(try await value(of: name, site: site))
    }
}

/// A credential as the engine holds it during a run.
public enum ResolvedCredential: Sendable {
    /// A value that is the same whenever it is sent (a password, a user name).
    case fixed(String)
    /// A code of the current time period, computed when the request that carries it is built (RFC 6238 TOTP).
    case oneTimeCode(any OneTimeCodeGenerator)
}

/// Computes the codes of a time-based one-time password (RFC 6238): one code per period, the period's number
/// (T = floor(unix time / period)) being HOTP's counter. The key never leaves the generator.
public protocol OneTimeCodeGenerator: Sendable {
    /// The length of a period (RFC 6238's X); at least one second.
    var period: Duration { get }
    /// The code of period number `counter`.
    func code(forCounter counter: Int64) -> String
}

/// Why a provider could not give a credential's value, without the site and credential names: the engine
/// adds them once ("site 'wiki': credential 'password' is not available: REASON"). A provider may throw
/// any error; this one keeps the message from naming them twice.
public struct CredentialUnavailable: Error, Sendable, CustomStringConvertible {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
