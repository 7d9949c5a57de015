import Foundation
import Logging
@testable import PostgresStore
import SiteConfig
import Testing
import TestSupport
import Vault

/// One real PostgreSQL server for the whole suite (``PostgresServer``), started before its first test
/// and stopped after its last; each test makes its own database.
struct WithPostgres: SuiteTrait, TestScoping {
    @TaskLocal static var server: PostgresServer?

    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let server = try await PostgresServer.start()
        do {
            try await Self.$server.withValue(server) { try await function() }
        } catch {
            await server.cleanUp()
            throw error
        }
        await server.cleanUp()
    }
}

extension Trait where Self == WithPostgres {
    /// Runs the suite against its own PostgreSQL server.
    static var postgres: WithPostgres { WithPostgres() }
}

/// A test's database, key file and the stores it runs.
struct Fleet: Sendable {
    let server: PostgresServer
    let database: String
    let folder: TemporaryFolder
    let keyFile: String
    let log: CapturedLog

    /// A new database and key file for the calling test.
    static func make(_ label: String = #function) async throws -> Fleet {
        guard let server = WithPostgres.server else { throw PostgresServerError.missing }
        let database = try await server.createDatabase(label)
        let folder = try TemporaryFolder(label)
        let keyFile = folder.path("master.key")
        try VaultKey.createKeyFile(at: keyFile)
        return Fleet(server: server, database: database, folder: folder, keyFile: keyFile, log: CapturedLog())
    }

    var url: DatabaseURL {
        get throws { try DatabaseURL(parsing: server.url(database: database)) }
    }

    var key: MasterKeySource { .keyFile(path: keyFile) }

    /// A store for this database (not running).
    func store(lease: Duration = .seconds(3), keeperID: String = PostgresStore.newKeeperID(), key: MasterKeySource? = nil) throws -> PostgresStore {
        try PostgresStore(
            url: try url, settings: PostgresStoreSettings(url: .literal(try url), lease: lease), key: key ?? self.key,
            keeperID: keeperID, logger: log.logger(label: keeperID))
    }

    /// Runs `count` stores (each `run()` and `open`ed) around `body`, then closes them.
    func withStores<T: Sendable>(
        _ count: Int, lease: Duration = .seconds(3), _ body: @Sendable ([PostgresStore]) async throws -> T
    ) async throws -> T {
        let stores = try (0..<count).map { index in try store(lease: lease, keeperID: "keeper-\(index)") }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            for store in stores { group.addTask { await store.run(); return nil } }
            defer { group.cancelAll() }
            do {
                for store in stores { try await store.open(createIfMissing: true) }
                let result = try await body(stores)
                for store in stores { await store.close() }
                return result
            } catch {
                for store in stores { await store.close() }
                throw error
            }
        }
    }

    /// psql in this test's database.
    func sql(_ statement: String) async throws -> String {
        try await server.sql(statement, database: database)
    }

    func cleanUp() { folder.cleanUp() }
}

extension PostgresServerError {
    static var missing: PostgresServerError { PostgresServerError("the suite has no PostgreSQL server (missing .postgres trait)") }
}
