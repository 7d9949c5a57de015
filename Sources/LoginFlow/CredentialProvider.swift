/// Resolves a site's named credentials at login time (SPEC section 3, `credentials:`). The CLI and the
/// daemon adapt the Credentials module to it; tests use a dictionary.
///
/// Values are secrets: the engine masks them in every message it produces.
public protocol CredentialProvider: Sendable {
    /// The value of credential `name` of site `site`. Errors must not contain the value.
    func value(of name: String, site: String) async throws -> String
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
