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
        if case .postgres = config.store {
            throw CLIFailure.usage(
                "config.yaml names a fleet's database (store: postgres): `login` and `probe` would run outside the fleet's "
                    + "leases, beside the keeper that holds the site; ask a running keeper instead (`sessionkeeper refresh SITE`: "
                    + "the keeper holding the site's lease logs in), or store a session with `sessionkeeper import`")
        }
        try VaultAccess.protectProcess()
        // The key's environment first: a passphrase variable leaves the process's environment before it is read.
        let keyEnvironment = VaultAccess.environment(for: MasterKeySource(config.vault.key))
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
    /// The daemon's or the login path's setup failure as a CLI failure: a vault, key or store problem as
    /// ``init(vaultError:)`` and ``init(storeError:)`` say, a bad database URL a usage error (exit 2), the
    /// rest operation failures (exit 1).
    init(assemblyError error: AssemblyError) {
        switch error {
        case let .vault(vault): self.init(vaultError: vault)
        case let .store(store): self.init(storeError: store)
        case .databaseURL: self = .usage(error.description)
        case .httpClient, .socketFile, .stopped: self = .failed(error.description)
        }
    }
}
