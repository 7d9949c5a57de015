import ArgumentParser
import SiteConfig

/// `--config`, the one declaration every subcommand that reads config.yaml shares (as an `@OptionGroup`).
struct ConfigOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "The daemon's config.yaml (default: $SESSIONKEEPER_CONFIG, then ./config.yaml, then $XDG_CONFIG_HOME/sessionkeeper/config.yaml).",
            valueName: "path"))
    var path: String?

    /// Where config.yaml is, in the order of SPEC section 9; a missing file is a usage failure (exit 2).
    func locate(_ loader: ConfigurationLoader) throws -> String {
        do {
            return try loader.locateConfig(explicit: path)
        } catch {
            throw CLIFailure.usage(error.description)
        }
    }

    /// Whether a config file was named (`--config` or `$SESSIONKEEPER_CONFIG`) or sits where SPEC section 9
    /// looks, so that a command which can do without one knows whether to read it.
    func isGiven(_ loader: ConfigurationLoader) -> Bool {
        path != nil || loader.environment["SESSIONKEEPER_CONFIG"] != nil || (try? loader.locateConfig(explicit: nil)) != nil
    }

    /// The config, located and loaded; any problem is a usage failure listing every diagnostic.
    func load(_ loader: ConfigurationLoader) throws -> DaemonConfig {
        try reading(loader) { file throws(ConfigError) in try loader.loadConfig(at: file) }
    }

    /// Only the socket settings of the config file (its `state_dir` and `socket`), for a client command
    /// that only needs to reach the daemon.
    func loadSocketSettings(_ loader: ConfigurationLoader) throws -> SocketSettings {
        try loadSocketLookup(loader).socket
    }

    /// The socket settings and the state folder of the config file.
    func loadSocketLookup(_ loader: ConfigurationLoader) throws -> (socket: SocketSettings, stateDirectory: String) {
        try reading(loader) { file throws(ConfigError) in try loader.loadSocketLookup(at: file) }
    }

    /// What `read` makes of the located config file; its errors are usage errors, in its words.
    private func reading<T>(_ loader: ConfigurationLoader, _ read: (String) throws(ConfigError) -> T) throws -> T {
        let file = try locate(loader)
        do {
            return try read(file)
        } catch {
            throw CLIFailure.usage(error.description)
        }
    }
}
