import ArgumentParser
import Foundation
import Platform
import SiteConfig

/// The `sessionkeeper` command. It only lists the subcommands; each lives in its own file and calls
/// into the library modules, which hold the logic.
@main
struct SessionKeeper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessionkeeper",
        abstract: "Keeps web logins alive and serves their cookies to local tools.",
        version: SessionKeeperVersion.string,
        subcommands: [
            AnswerCommand.self,
            CheckCommand.self,
            ConfigCommand.self,
            CookieCommand.self,
            ExecCommand.self,
            ImportCommand.self,
            JarCommand.self,
            LoginCommand.self,
            ProbeCommand.self,
            RefreshCommand.self,
            RequestCommand.self,
            RunCommand.self,
            SecretCommand.self,
            StatusCommand.self,
            StoreCommand.self,
            VaultCommand.self,
        ]
    )
}

extension SessionKeeper {
    /// ArgumentParser exits 64 (EX_USAGE) on a bad argument; SPEC section 9 says usage errors exit 2. This
    /// entry point maps that one code and leaves every other exit (help, version, subcommand codes) as it is.
    static func main() async {
        do {
            var command = try parseAsRoot(Array(ProcessArguments.current.dropFirst()))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .success {
                // --help and --version: through Console, so a failed write to stdout is reported, not lost.
                let text = fullMessage(for: error)
                if !text.isEmpty { Console.out(text) }
                Foundation.exit(Exit.ok)
            }
            if exitCode(for: error) == .validationFailure {
                Console.err(fullMessage(for: error))
                Foundation.exit(Exit.usage)
            }
            exit(withError: error)
        }
    }
}
