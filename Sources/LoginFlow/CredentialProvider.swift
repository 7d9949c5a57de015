/// Resolves a site's named credentials at login time (SPEC section 3, `credentials:`). The CLI and the
/// daemon adapt the Credentials module to it; tests use a dictionary.
///
/// Values are secrets: the engine masks them in every message it produces.
public protocol CredentialProvider: Sendable {
    /// The value of credential `name` of site `site`. Errors must not contain the value.
    func value(of name: String, site: String) async throws -> String
}
