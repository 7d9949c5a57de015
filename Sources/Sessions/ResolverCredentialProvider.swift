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

    /// A `{totp: ...}` credential as a generator (its secret read and checked now), so the engine computes each code
    /// when the request carrying it is built; every other kind as its value.
    public func credential(named name: String, site siteName: String) async throws -> ResolvedCredential {
        do {
            if let generator = try await resolver.totpGenerator(of: name, in: site) { return .oneTimeCode(TOTPCodes(generator: generator)) }
            return .fixed(try await resolver.value(of: name, in: site))
        } catch {
            throw CredentialUnavailable(reason: error.reason)
        }
    }
}

/// A TOTP credential's codes behind LoginFlow's seam.
struct TOTPCodes: OneTimeCodeGenerator {
    let generator: TOTPGenerator

    var period: Duration { generator.period }

    func code(forCounter counter: Int64) -> String { generator.code(forCounter: counter) }
}
