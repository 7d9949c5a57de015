import Foundation
import Testing
import TestSupport

/// `secret`, `vault init` and `store migrate` against a real PostgreSQL when config.yaml names one
/// (SPEC section 11), through the built executable.
@Suite(.serialized) struct FleetStoreCLITests {
    @Test func secretsAndMigrationThereAndBack() async throws {
        let server = try await PostgresServer.start()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        do {
            try await exercise(server, folder)
        } catch {
            await server.cleanUp()
            throw error
        }
        await server.cleanUp()
    }

    private func exercise(_ server: PostgresServer, _ folder: TemporaryFolder) async throws {
        let binary = try #require(CLIRunner.executable)
        let database = try await server.createDatabase()
        let password = "Url-pa55word-x9"
        _ = try await server.sql("ALTER ROLE \(server.user) PASSWORD '\(password)'", database: "postgres")
        let url = server.url(database: database).replacingOccurrences(of: "\(server.user)@", with: "\(server.user):\(password)@")
        let freshURL = server.url(database: try await server.createDatabase())
            .replacingOccurrences(of: "\(server.user)@", with: "\(server.user):\(password)@")
        try folder.write("sites_dir: sites\nstate_dir: state\n", to: "folder.yaml")
        try folder.write("sites_dir: sites\nstate_dir: state\nstore:\n  postgres:\n    url: {env: SK_DATABASE_URL}\n", to: "fleet.yaml")
        func run(_ arguments: [String], config: String, input: String? = nil) async throws -> CLIRunner.Output {
            let result = try await runProgram(
                binary.path, arguments + ["--config", folder.path(config)],
                environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path, "SK_DATABASE_URL": url, "SK_FRESH_URL": freshURL],
                directory: folder.path,
                input: input.map { Data($0.utf8) })
            let output = CLIRunner.Output(result)
            #expect(!output.stdout.contains(password) && !output.stderr.contains(password), "the URL's password was printed")
            return output
        }

        // A single machine's vault: two secrets.
        for (name, value) in [("wiki/password", "pw-one"), ("mail/token", "tok-two")] {
            let stored = try await run(["secret", "set", name], config: "folder.yaml", input: value)
            #expect(stored.status == 0, "\(stored.stderr)")
        }
        // Into the database, twice: the second copies nothing.
        let migrated = try await run(["store", "migrate"], config: "fleet.yaml")
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout.contains("copied the keyring; copied 0 session(s) and 2 secret(s); 0 item(s) already there"))
        let again = try await run(["store", "migrate"], config: "fleet.yaml")
        #expect(again.stdout.contains("the keyring was already there; copied 0 session(s) and 0 secret(s); 2 item(s) already there"))
        #expect(!migrated.stdout.contains("pw-one") && !migrated.stdout.contains("tok-two"))

        // The secret commands work against the database.
        #expect(try await run(["secret", "set", "api/key"], config: "fleet.yaml", input: "k-three").status == 0)
        #expect(try await run(["secret", "rm", "mail/token"], config: "fleet.yaml").status == 0)
        let listed = try await run(["secret", "list"], config: "fleet.yaml")
        #expect(listed.stdout == "api/key\nwiki/password\n")
        #expect(try await run(["vault", "init"], config: "fleet.yaml").status == 2)
        #expect(try await run(["vault", "rotate"], config: "fleet.yaml").status == 2)
        let clear = try await server.sql(
            "SELECT count(*) FROM sessionkeeper_secrets WHERE position(convert_to('k-three', 'UTF8') IN item) > 0", database: database)
        #expect(clear == "0")

        // Back into a new state folder.
        try FileManager.default.copyItem(atPath: folder.path("state/master.key"), toPath: folder.path("back-master.key"))
        try folder.write(
            "sites_dir: sites\nstate_dir: back\nvault: {key: {file: back-master.key}}\nstore:\n  postgres:\n    url: {env: SK_DATABASE_URL}\n",
            to: "fleet-back.yaml")
        let returned = try await run(["store", "migrate", "--to-folder"], config: "fleet-back.yaml")
        #expect(returned.status == 0, "\(returned.stderr)")
        #expect(returned.stdout.contains("copied the keyring; copied 0 session(s) and 2 secret(s)"))
        try folder.write("sites_dir: sites\nstate_dir: back\nvault: {key: {file: back-master.key}}\n", to: "back.yaml")
        #expect(try await run(["secret", "list"], config: "back.yaml").stdout == "api/key\nwiki/password\n")

        // `vault init` on an empty database makes the missing key file (32 bytes, mode 0600), as for a folder; a
        // second init is refused, and one with another missing key file leaves no key behind.
        for (file, key) in [("fresh.yaml", "fresh.key"), ("other.yaml", "other.key")] {
            try folder.write(
                "sites_dir: sites\nstate_dir: \(key)-state\nvault: {key: {file: \(key)}}\nstore:\n  postgres:\n    url: {env: SK_FRESH_URL}\n",
                to: file)
        }
        let initialized = try await run(["vault", "init"], config: "fresh.yaml")
        #expect(initialized.status == 0 && initialized.stdout.contains("created a vault in"), "\(initialized.stderr)")
        let keyAttributes = try FileManager.default.attributesOfItem(atPath: folder.path("fresh.key"))
        #expect(keyAttributes[.size] as? Int == 32 && (keyAttributes[.posixPermissions] as? Int) == 0o600)
        #expect(try await run(["vault", "init"], config: "fresh.yaml").status == 2)
        let foreign = try await run(["vault", "init"], config: "other.yaml")
        #expect(foreign.status != 0, "\(foreign.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder.path("other.key")), "a key file that unlocks nothing was left")
        #expect(try await run(["secret", "set", "fresh/one"], config: "fresh.yaml", input: "v").status == 0)
        #expect(try await run(["secret", "list"], config: "fresh.yaml").stdout == "fresh/one\n")

        // A database that cannot be reached: exit 1, a message naming it, no password.
        try folder.write(
            "sites_dir: sites\nstate_dir: state\nstore:\n  postgres:\n    url: \"postgres://x:\(password)@/none?host=\(folder.path)&port=9&connect_timeout=2\"\n",
            to: "nowhere.yaml")
        let unreachable = try await run(["secret", "list"], config: "nowhere.yaml")
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("unreachable"), "\(unreachable.stderr)")
    }
}
