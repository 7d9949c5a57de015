import ArgumentParser
import Assembly
import Foundation
import PostgresStore
import SiteConfig

/// `sessionkeeper store migrate [--to-folder]` (SPEC section 11): a single machine's vault into the fleet's
/// database and back.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Move the vault between the state folder and a fleet's PostgreSQL database.",
        subcommands: [StoreMigrateCommand.self]
    )
}

struct StoreMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy the state folder's vault (sessions, secrets, keyring) into the database config.yaml's store names.",
        discussion: """
            With --to-folder, copy the database's vault into state_dir instead. Safe to run again: items the \
            destination already holds unchanged are left alone. Refuses a destination that holds a vault under \
            another master key. Run it while no keeper uses the database. Prints counts, never a value. \
            Exit status: 0 copied; 1 the database failed or some items could not be read; 2 configuration or key problem.
            """
    )

    @Flag(name: .customLong("to-folder"), help: "Copy from the database into state_dir.")
    var toFolder = false

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            let config = try options.loadConfig()
            let keyEnvironment = try StoreAccess.keyEnvironment(of: config)
            let summary: MigrationSummary
            do {
                summary = try await StoreBackend.migrate(
                    config, toFolder: toFolder, environment: ProcessInfo.processInfo.environment, keyEnvironment: keyEnvironment)
            } catch let error as AssemblyError {
                throw CLIFailure(assemblyError: error)
            }
            let destination = toFolder ? "\(config.stateDirectory)/vault" : StoreBackend.location(of: config)
            let keyring = summary.keyring == .copied ? "copied the keyring" : "the keyring was already there"
            Console.out(
                "\(destination): \(keyring); copied \(summary.sessions) session(s) and \(summary.secrets) secret(s); "
                    + "\(summary.unchanged) item(s) already there unchanged")
            for problem in summary.problems { Console.err("sessionkeeper: warning: not copied: \(problem)") }
            if !summary.problems.isEmpty { throw CLIFailure.failed("\(summary.problems.count) item(s) could not be read and were not copied") }
        }
    }
}
