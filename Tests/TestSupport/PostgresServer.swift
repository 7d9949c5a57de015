import Foundation
import Locking
import Platform

/// A real PostgreSQL server for one test suite, from Debian's `postgresql` package (scripts/install-deps):
/// `initdb` into a temporary folder, `pg_ctl start` listening only on a Unix socket in that folder, and
/// `pg_ctl stop` at the end. No system service is involved.
///
/// PostgreSQL refuses to run as root, and CI runs as root: the folder then belongs to the `postgres` user
/// and every server program runs through `runuser -u postgres --`. As another user the programs run as
/// that user. Every program runs through ``Platform/ChildProcess``.
public final class PostgresServer: Sendable {
    /// The data folder's parent (also the socket's folder).
    public let folder: String
    /// The folder of initdb, pg_ctl, postgres and psql.
    public let binaries: String
    /// The port number in the socket's name (`.s.PGSQL.PORT`): distinct per server, though nothing listens on TCP.
    public let port: Int
    /// The database user the tests connect as (the superuser initdb made).
    public let user: String
    private let asPostgres: Bool

    private init(folder: String, binaries: String, port: Int, user: String, asPostgres: Bool) {
        self.folder = folder
        self.binaries = binaries
        self.port = port
        self.user = user
        self.asPostgres = asPostgres
    }

    /// The data folder.
    public var dataDirectory: String { folder + "/data" }

    /// Creates the cluster and starts the server with `settings` (`-c NAME=VALUE` each; pg_stat_statements
    /// is loaded by default).
    public static func start(label: String = #fileID, settings: [String: String] = [:]) async throws -> PostgresServer {
        guard let binaries = installedBinaries() else {
            throw PostgresServerError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin; run scripts/install-deps")
        }
        let asPostgres = Syscall.userID == 0
        let safe = label.filter { $0.isLetter || $0.isNumber }.prefix(24)
        // A short path: the socket's path (folder + "/.s.PGSQL.NNNNN") must fit in 107 bytes.
        let folder = "/tmp/skpg-\(safe)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let user = asPostgres ? "postgres" : (ProcessInfo.processInfo.environment["USER"] ?? "postgres")
        let port = Int.random(in: 20_000...60_000)
        let server = PostgresServer(folder: folder, binaries: binaries, port: port, user: user, asPostgres: asPostgres)
        if asPostgres { try await server.runChecked("/bin/chown", ["postgres:postgres", folder], asServer: false) }
        try await server.runChecked(
            binaries + "/initdb", ["-D", server.dataDirectory, "-U", user, "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"])
        var options = [
            "listen_addresses": "''", "unix_socket_directories": "'\(folder)'", "port": "\(port)", "fsync": "off",
            "shared_preload_libraries": "pg_stat_statements", "max_connections": "60",
        ]
        options.merge(settings) { _, new in new }
        let line = options.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }.joined(separator: " ")
        try server.writeOptions(line)
        try await server.startServer()
        return server
    }

    /// Starts the server again after ``stop(mode:)``.
    public func startServer() async throws {
        let options = try String(contentsOfFile: folder + "/options", encoding: .utf8)
        try await runChecked(binaries + "/pg_ctl", ["start", "-w", "-t", "60", "-D", dataDirectory, "-l", folder + "/server.log", "-o", options])
    }

    /// `pg_ctl stop -m MODE`: `fast` ends sessions cleanly, `immediate` drops everything at once.
    public func stop(mode: String = "fast") async throws {
        try await runChecked(binaries + "/pg_ctl", ["stop", "-w", "-t", "60", "-m", mode, "-D", dataDirectory])
    }

    /// Stops the server (if running) and removes the folder.
    public func cleanUp() async {
        _ = try? await run(binaries + "/pg_ctl", ["stop", "-w", "-t", "60", "-m", "immediate", "-D", dataDirectory])
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A URL for `database` over the Unix socket, as config.yaml would give it.
    public func url(database: String) -> String {
        "postgres://\(user)@/\(database)?host=\(folder)&port=\(port)"
    }

    /// Creates an empty database for one test; returns its name.
    @discardableResult
    public func createDatabase(_ label: String = #function) async throws -> String {
        let name = "t_" + label.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(30) + "_" + UUID().uuidString.prefix(6).lowercased()
        _ = try await sql("CREATE DATABASE \(name)", database: "postgres")
        _ = try await sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", database: name)
        return name
    }

    /// Makes `role` log in with its password (SCRAM) over the socket, while every other role keeps trust.
    public func requirePassword(for role: String) async throws {
        try await addAuthenticationRule("local all \(role) scram-sha-256")
    }

    /// Lets any role connect over TCP from `network` (CIDR) without a password, as the socket does, and reloads.
    /// The server must also listen there (`listen_addresses` in ``start(label:settings:)``).
    public func trust(network: String) async throws {
        try await addAuthenticationRule("host all all \(network) trust")
    }

    /// Puts `rule` first in pg_hba.conf (the server takes the first rule that matches) and reloads the server.
    private func addAuthenticationRule(_ rule: String) async throws {
        let path = dataDirectory + "/pg_hba.conf"
        let rules = try String(contentsOfFile: path, encoding: .utf8)
        try Data((rule + "\n" + rules).utf8).write(to: URL(fileURLWithPath: path))
        _ = try await sql("SELECT pg_reload_conf()", database: "postgres")
    }

    /// Runs `statement` with psql in `database` and returns its rows, one a line, columns separated by `|`.
    public func sql(_ statement: String, database: String) async throws -> String {
        let result = try await run(
            binaries + "/psql",
            ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", folder, "-p", "\(port)", "-U", user, "-d", database, "-c", statement],
            asServer: false)
        guard result.termination == .exited(0) else {
            throw PostgresServerError("psql failed (\(result.termination)): \(result.errors.joined(separator: " | "))")
        }
        return String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Programs

    private static func installedBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        return versions.map { "\(root)/\($0)/bin" }.first { FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl") }
    }

    private func writeOptions(_ line: String) throws {
        let path = folder + "/options"
        try Data(line.utf8).write(to: URL(fileURLWithPath: path))
    }

    private func runChecked(_ program: String, _ arguments: [String], asServer: Bool = true) async throws {
        let result = try await run(program, arguments, asServer: asServer)
        guard result.termination == .exited(0) else {
            let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
            throw PostgresServerError(
                "\((program as NSString).lastPathComponent) failed (\(result.termination)): \(result.errors.joined(separator: " | ")) \(log)")
        }
    }

    private struct Outcome {
        var termination: ProcessTermination
        var output: [UInt8]
        var errors: [String]
    }

    private func run(_ program: String, _ arguments: [String], asServer: Bool = true) async throws -> Outcome {
        let (executable, argv) = asServer && asPostgres ? ("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments) : (program, arguments)
        var environment = ChildEnvironment.minimal(from: ProcessInfo.processInfo.environment)
        environment.set("LC_ALL", to: "C")
        let errors = Locked<[String]>([])
        let result = try await ChildProcess(
            executable: executable, arguments: argv, environment: environment, timeout: .seconds(120),
            outputLimit: 1 << 20, outputOverflow: .truncate
        ).run(standardErrorLine: { line in errors.withLock { $0.append(line) } })
        return Outcome(termination: result.termination, output: result.standardOutput, errors: errors.withLock { $0 })
    }
}

/// A PostgreSQL test server could not be set up or used.
public struct PostgresServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
