import Assembly
import Foundation
import SiteConfig
import Vault

extension LoginWiring {
    /// ``LoginWiring/open(_:environment:keyEnvironment:logger:credentialOutput:)`` for a command that shows a run
    /// as it goes (`login`, `probe`), after ``VaultAccess/protectProcess()``: credential commands' output goes to
    /// `progress` (the resolver masks their own output first), and with `-vv` the login path traces every exchange.
    static func open(_ config: DaemonConfig, progress: LoginProgress) throws -> LoginWiring {
        // A login outside the fleet's leases would run beside the keeper holding the site: two logins at once.
        do throws(AssemblyError) {
            try StoreBackend.checkLoginOutsideDaemon(config)
        } catch {
            throw CLIFailure(assemblyError: error)
        }
        let keyEnvironment = try StoreAccess.keyEnvironment(of: config)
        var wiring: LoginWiring
        do throws(AssemblyError) {
            wiring = try open(
                config, environment: ProcessInfo.processInfo.environment, keyEnvironment: keyEnvironment,
                credentialOutput: progress.credentialOutput)
        } catch {
            throw CLIFailure(assemblyError: error)
        }
        wiring.login.tracesExchanges = progress.verbosity >= 2
        return wiring
    }
}

extension CLIFailure {
    /// The daemon's, the store's or the login path's setup failure as a CLI failure: a fault in the keys or the
    /// configuration a usage error (exit 2), the rest operation failures (exit 1). Never shows a password.
    init(assemblyError error: AssemblyError) {
        self.init(message: error.description, code: error.isConfigurationProblem ? Exit.usage : Exit.failed)
    }
}
