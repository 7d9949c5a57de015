import ArgumentParser
import Assembly
import Daemon
import Foundation
import Logging
import SiteConfig
import Vault

/// `sessionkeeper run [--config config.yaml]` (SPEC section 7): the daemon, in the foreground. Stops
/// cleanly on SIGTERM or SIGINT; SIGHUP reloads config.yaml and every site. The daemon itself is
/// ``Assembly/DaemonAssembly``; this command reads its options and runs it.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Keep every site logged in (the daemon, in the foreground).",
        discussion: """
            Loads config.yaml and every site of sites_dir, restores each site's session from the vault (a \
            valid one is kept, not logged in again), and keeps them logged in: before the essential cookies \
            expire, at least every refresh.max_age, and when a check says the session died. Site files \
            added, changed or removed take effect at once; a file that fails to parse keeps its last good \
            definition. SIGHUP reloads config.yaml and every site; SIGTERM and SIGINT stop cleanly. Under \
            systemd, Type=notify is supported through NOTIFY_SOCKET. Clients read the cookies over the \
            socket API at socket.path (curl --unix-socket PATH http://localhost/v1/sites). The notifiers of \
            config.yaml's notify: are told when a site needs attention and when it recovers (docs/PEOPLE.md).
            """
    )

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            try VaultAccess.protectProcess()
            let path = try config.locate(ConfigurationLoader())
            let daemonConfig = try config.load(ConfigurationLoader())
            // The passphrase variable leaves the environment before anything keeps a copy of it: the loader the
            // daemon keeps for reloads holds the environment without it.
            let keyEnvironment = VaultAccess.environment(for: MasterKeySource(daemonConfig.vault.key))
            let loader = ConfigurationLoader()
            LogFormat.bootstrap(daemonConfig.log)
            let daemon = DaemonAssembly(
                configPath: path, config: daemonConfig, loader: loader, environment: ProcessInfo.processInfo.environment,
                keyEnvironment: keyEnvironment, logger: Logger(label: "sessionkeeper"))
            do throws(AssemblyError) {
                try await daemon.run()
            } catch {
                throw CLIFailure(assemblyError: error)
            }
        }
    }
}
