import Credentials
import LoginFlow
import SiteConfig

/// The Credentials module behind LoginFlow's ``CredentialProvider`` seam: each `{{ credentials.NAME }}`
/// is resolved (vault secret, env, file, command, TOTP) when the flow asks for it.
public struct ResolverCredentialProvider: CredentialProvider {
    public let resolver: CredentialResolver
    public let site: SiteDefinition

    public init(resolver: CredentialResolver, site: SiteDefinition) {
        self.resolver = resolver
        self.site = site
    }

    public func value(of name: String, site siteName: String) async throws -> String {
        // The engine names the site and the credential; only the reason travels (never the value).
        do {
            return try await resolver.value(of: name, in: site)
        } catch {
            throw CredentialUnavailable(reason: error.reason)
        }
    }
}
