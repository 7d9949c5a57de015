import ArgumentParser
import Foundation
import Vault

/// `sessionkeeper secret set|list|rm`: credentials in the vault (SPEC section 9), wherever config.yaml keeps
/// it: the vault folder, or a fleet's database.
struct SecretCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret",
        abstract: "Store, list and remove credentials in the encrypted vault.",
        subcommands: [SecretSetCommand.self, SecretListCommand.self, SecretRemoveCommand.self]
    )
}

struct SecretSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store a secret; the value is read from standard input (without echo on a terminal).",
        discussion: "Sites use it as {secret: NAME}. A value piped in loses one trailing newline. An empty value is refused."
    )

    @Argument(help: "The secret's name, e.g. wiki/password.")
    var name: String

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            guard ItemReference.isValidName(name) else {
                throw CLIFailure.usage("invalid secret name '\(name)': names are 1 to 255 bytes of UTF-8 without control characters")
            }
            // Find the config before asking for the value, but unlock the vault only after it was typed:
            // a prompt may wait for a long time.
            let config = try options.loadConfig()
            let value = try SecretInput.read(prompt: "Value for secret '\(name)': ", what: "value")
            let item = ItemReference(.credential, name)
            try await options.withItems(of: config, create: true) { items in
                do {
                    try await items.set(value, for: item)
                } catch {
                    throw CLIFailure(vaultError: error)
                }
            }
            Console.err("stored secret '\(name)'")
        }
    }
}

struct SecretListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print the names of the stored secrets, one a line (never their values)."
    )

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            let found = try await options.withItems(of: try options.loadConfig(), create: false) { items in
                do {
                    return try await items.names(of: .credential)
                } catch {
                    throw CLIFailure(vaultError: error)
                }
            }
            for name in found.names { Console.out(name) }
            for problem in found.problems { Console.err("sessionkeeper: warning: \(problem)") }
            if !found.problems.isEmpty {
                throw CLIFailure.failed("\(found.problems.count) vault item(s) could not be read")
            }
        }
    }
}

struct SecretRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a secret.")

    @Argument(help: "The secret's name.")
    var name: String

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            let item = ItemReference(.credential, name)
            let removed = try await options.withItems(of: try options.loadConfig(), create: false) { items in
                do {
                    return try await items.remove(item)
                } catch {
                    throw CLIFailure(vaultError: error)
                }
            }
            guard removed else { throw CLIFailure.failed("no secret '\(name)' in the vault") }
            Console.err("removed secret '\(name)'")
        }
    }
}
