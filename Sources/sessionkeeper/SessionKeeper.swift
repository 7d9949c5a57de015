import ArgumentParser

/// The `sessionkeeper` command. It only lists the subcommands; each lives in its own file and calls
/// into the library modules, which hold the logic.
@main
struct SessionKeeper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessionkeeper",
        abstract: "Keeps web logins alive and serves their cookies to local tools.",
        version: SessionKeeperVersion.string,
        subcommands: [
            CheckCommand.self,
            JarCommand.self,
            SecretCommand.self,
            VaultCommand.self,
        ]
    )
}

enum SessionKeeperVersion {
    static let string = "0.1.0"
}
