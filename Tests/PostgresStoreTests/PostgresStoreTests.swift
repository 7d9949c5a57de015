import CookieJar
import Foundation
import Logging
@testable import PostgresStore
import Sessions
import SiteConfig
import Testing
import TestSupport
import Vault

/// The fleet store against a real PostgreSQL (one server for the suite, a database per test).
@Suite(.postgres, .serialized)
struct PostgresStoreTests {
    // MARK: Schema

    @Test func schemaIsCreatedInAnEmptyDatabase() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(1) { _ in }
        #expect(try await fleet.sql("SELECT version FROM sessionkeeper_schema") == "\(Schema.latest)")
        let tables = try await fleet.sql(
            "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE tablename LIKE 'sessionkeeper_%'")
        #expect(tables == "sessionkeeper_keepers,sessionkeeper_keyring,sessionkeeper_leases,sessionkeeper_schema,sessionkeeper_secrets,sessionkeeper_sessions")
        // The keeper registered itself, and left on close.
        #expect(try await fleet.sql("SELECT count(*) FROM sessionkeeper_keepers") == "0")
    }

    @Test func schemaIsUpgradedFromThePreviousVersionKeepingItsRows() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        let previous = Schema.latest - 1
        // A database as the previous version left it, holding a secret.
        let old = try fleet.store()
        try await PostgresStore.withRunning(old, createIfMissing: true) { _ in }
        _ = try await fleet.sql("DROP TABLE sessionkeeper_leases, sessionkeeper_keepers")
        _ = try await fleet.sql("UPDATE sessionkeeper_schema SET version = \(previous)")
        let keys = try VaultKeys.unlock(Array(try await keyringBytes(fleet)), key: fleet.key, origin: "test")
        let id = keys.itemID(of: ItemReference(.credential, "kept"))
        let sealed = try keys.seal(Array("still here".utf8), for: ItemReference(.credential, "kept"))
        _ = try await fleet.sql(
            "INSERT INTO sessionkeeper_secrets (id, item, present) VALUES ('\\x\(hex(id))', '\\x\(hex(sealed))', true)")

        let value = try await fleet.withStores(1) { stores in
            let lease = try await stores[0].leases.acquire("wiki")
            #expect(lease?.epoch == 1)
            return try await stores[0].items.value(of: ItemReference(.credential, "kept"))
        }
        #expect(value == Array("still here".utf8))
        #expect(try await fleet.sql("SELECT version FROM sessionkeeper_schema") == "\(Schema.latest)")
    }

    @Test func keepersStartingTogetherUpgradeOnce() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        // Six keepers open an empty database at once: one schema, one keyring, all of them open.
        let opened = try await fleet.withStores(6) { stores in stores.count }
        #expect(opened == 6)
        #expect(try await fleet.sql("SELECT count(*) FROM sessionkeeper_keyring") == "1")
        #expect(try await fleet.sql("SELECT count(*) FROM sessionkeeper_schema") == "1")
    }

    @Test func aNewerSchemaIsRefused() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(1) { _ in }
        _ = try await fleet.sql("UPDATE sessionkeeper_schema SET version = \(Schema.latest + 1)")
        let store = try fleet.store()
        await #expect {
            try await PostgresStore.withRunning(store, createIfMissing: false) { _ in }
        } throws: { error in
            guard let error = error as? PostgresStoreError, case .schemaTooNew = error.kind else { return false }
            return error.description.contains("newer than this SessionKeeper")
        }
    }

    // MARK: Items

    @Test func itemsAreStoredAsCiphertextUnderKeyedHashIds() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        let cookieValue = "c00kie-VALUE-8f3a"
        let secretValue = "hunter2-secret-91b"
        let record = SessionRecord(
            cookies: [Cookie(name: "sid", value: cookieValue, domain: "wiki.example", path: "/")],
            lastLogin: Date(timeIntervalSince1970: 1_700_000_000), expiresAt: nil, userAgent: "SessionKeeper/1")
        try await fleet.withStores(1) { stores in
            let items = stores[0].items
            try await items.set(Array(secretValue.utf8), for: ItemReference(.credential, "wiki/password"))
            try await VaultSessionStore(items: items).save(record, site: "wiki")
            #expect(try await items.value(of: ItemReference(.credential, "wiki/password")) == Array(secretValue.utf8))
            #expect(try await VaultSessionStore(items: items).load(site: "wiki") == record)
            #expect(try await items.names(of: .credential).names == ["wiki/password"])
            #expect(try await items.value(of: ItemReference(.credential, "absent")) == nil)
        }
        // In SQL: 32-byte ids, vault items (magic SKVI), and neither a value nor a name anywhere.
        for table in ["sessionkeeper_sessions", "sessionkeeper_secrets", "sessionkeeper_keyring"] {
            let column = table == "sessionkeeper_keyring" ? "bytes" : "item"
            for needle in [cookieValue, secretValue, "wiki/password", "sid"] {
                let count = try await fleet.sql(
                    "SELECT count(*) FROM \(table) WHERE position(convert_to('\(needle)', 'UTF8') IN \(column)) > 0")
                #expect(count == "0", "\(table) holds '\(needle)' in clear")
            }
        }
        #expect(try await fleet.sql("SELECT string_agg(DISTINCT length(id)::text, ',') FROM sessionkeeper_secrets") == "32")
        #expect(try await fleet.sql("SELECT bool_and(substring(item FROM 1 FOR 4) = 'SKVI'::bytea) FROM sessionkeeper_sessions") == "t")
    }

    /// Whoever can write the database can put an item's older row back (its seal is valid): a keeper that has read
    /// or written a newer version refuses it (the write counter sealed in every row), on a read, in a listing and in
    /// the change feed, and the next write takes a counter above both.
    @Test func anOlderRowPutBackIsRefusedAsRolledBack() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        let item = ItemReference(.credential, "wiki/password")
        try await fleet.withStores(2) { stores in
            let (writer, reader) = (stores[0].items, stores[1].items)
            try await writer.set(Array("old-password".utf8), for: item)
            #expect(try await reader.value(of: item) == Array("old-password".utf8))
            let old = try await fleet.sql("SELECT encode(item, 'hex') FROM sessionkeeper_secrets")
            try await writer.set(Array("new-password".utf8), for: item)
            #expect(try await reader.value(of: item) == Array("new-password".utf8))
            // Each write's counter is above the last: 1, then 2 (in the header after magic, format and key id).
            #expect(try await fleet.sql("SELECT get_byte(item, 4) || ':' || get_byte(item, 16) FROM sessionkeeper_secrets") == "2:2")

            _ = try await fleet.sql("UPDATE sessionkeeper_secrets SET item = decode('\(old)', 'hex')")
            for store in [writer, reader] {
                let error = await #expect(throws: VaultError.self) { try await store.value(of: item) }
                #expect(error?.reason == .rolledBack(found: 1, seen: 2), "\(String(describing: error))")
                #expect(error?.description.contains("older version") == true)
                #expect(error?.description.contains("password") == true && error?.description.contains("old-password") == false)
                let listing = try await store.contents(of: .credential)
                #expect(listing.values.isEmpty && listing.problems.map(\.reason) == [.rolledBack(found: 1, seen: 2)])
            }
            // Set again, the item goes on above the counters seen.
            try await reader.set(Array("newest".utf8), for: item)
            #expect(try await fleet.sql("SELECT get_byte(item, 16) FROM sessionkeeper_secrets") == "3")
            #expect(try await writer.value(of: item) == Array("newest".utf8))
        }
    }

    @Test func removalLeavesATombstoneAndListingsSkipIt() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(1) { stores in
            let items = stores[0].items
            try await items.set(Array("a".utf8), for: ItemReference(.credential, "one"))
            try await items.set(Array("b".utf8), for: ItemReference(.credential, "two"))
            #expect(try await items.remove(ItemReference(.credential, "one")))
            #expect(try await items.remove(ItemReference(.credential, "one")) == false)
            #expect(try await items.value(of: ItemReference(.credential, "one")) == nil)
            #expect(try await items.list().items == [ItemReference(.credential, "two")])
            // Stored again after removal.
            try await items.set(Array("c".utf8), for: ItemReference(.credential, "one"))
            #expect(try await items.value(of: ItemReference(.credential, "one")) == Array("c".utf8))
        }
        #expect(try await fleet.sql("SELECT count(*) FROM sessionkeeper_secrets") == "2")
    }

    @Test func aKeeperWithAnotherMasterKeyIsRefused() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(1) { _ in }
        let otherKey = fleet.folder.path("other.key")
        try VaultKey.createKeyFile(at: otherKey)
        let store = try fleet.store(key: .keyFile(path: otherKey))
        await #expect {
            try await PostgresStore.withRunning(store, createIfMissing: true) { _ in }
        } throws: { error in
            guard let error = error as? PostgresStoreError, case .vault(.wrongKey) = error.kind else { return false }
            return true
        }
    }

    // MARK: Leases

    @Test func twoKeepersRacingForASiteExactlyOneWins() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(2) { stores in
            for round in 0..<20 {
                let site = "site-\(round)"
                async let first = stores[0].leases.acquire(site)
                async let second = stores[1].leases.acquire(site)
                let winners = [try await first, try await second].compactMap { $0 }
                #expect(winners.count == 1, "round \(round): \(winners.count) winners")
                #expect(winners.first?.epoch == 1)
            }
        }
    }

    @Test func aTakeoverAfterExpiryIncrementsTheEpochAndFencesTheOldHolder() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(2, lease: .seconds(1)) { stores in
            let (a, b) = (stores[0], stores[1])
            let won = try #require(try await a.leases.acquire("wiki"))
            #expect(won.epoch == 1)
            // Held: B cannot take it; A taking it again keeps the epoch.
            #expect(try await b.leases.acquire("wiki") == nil)
            #expect(try await a.leases.acquire("wiki")?.epoch == 1)
            let record = SessionRecord(cookies: [], lastLogin: Date(), expiresAt: nil, userAgent: "A")
            try await a.sessions(fencedBy: won).save(record, site: "wiki")

            // A stalls past its lease; B takes the site over under epoch 2.
            try await Task.sleep(for: .milliseconds(1300))
            #expect(!won.isValid())
            let taken = try #require(try await b.leases.acquire("wiki"))
            #expect(taken.epoch == 2)
            let newer = SessionRecord(cookies: [], lastLogin: Date(), expiresAt: nil, userAgent: "B")
            try await b.sessions(fencedBy: taken).save(newer, site: "wiki")

            // A wakes up and writes under epoch 1: refused, typed, and B's session stands.
            await #expect {
                try await a.sessions(fencedBy: won).save(record, site: "wiki")
            } throws: { error in
                guard let error = error as? SessionStoreError else { return false }
                return error.kind == .staleEpoch && error.description.contains("stale lease epoch")
            }
            await #expect(throws: SessionStoreError.self) { try await a.sessions(fencedBy: won).remove(site: "wiki") }
            #expect(try await VaultSessionStore(items: a.items).load(site: "wiki")?.userAgent == "B")
            // A's renewal reports the lease lost.
            let renewal = try await a.leases.renewAll()
            #expect(renewal.lost == ["wiki"])
            #expect(renewal.held.isEmpty)
        }
    }

    @Test func renewAllIsOneStatementWhateverTheNumberOfLeases() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(1, lease: .seconds(30)) { stores in
            let sites = (0..<200).map { "site-\($0)" }
            let taken = try await stores[0].leases.acquireAvailable(among: sites, limit: 200)
            #expect(taken.count == 200)
            _ = try await fleet.sql("SELECT pg_stat_statements_reset()")
            for _ in 0..<3 {
                let renewal = try await stores[0].leases.renewAll()
                #expect(renewal.held.count == 200)
                #expect(renewal.lost.isEmpty)
                #expect(renewal.liveKeepers == 1)
            }
            let calls = try await fleet.sql(
                """
                SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
                WHERE query LIKE '%sessionkeeper_leases%' AND query NOT LIKE '%pg_stat_statements%'
                """)
            #expect(calls == "3", "statements touching the leases during 3 renewals of 200 leases: \(calls)")
        }
    }

    @Test func releasedAndExpiredLeasesAreOfferedToTheOtherKeepers() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(3, lease: .seconds(30)) { stores in
            let sites = (0..<12).map { "site-\($0)" }
            for store in stores { try store.leases.know(sites: sites) }
            // The first keeper took everything before the others started.
            let all = try await stores[0].leases.acquireAvailable(among: sites, limit: 12)
            #expect(all.count == 12)
            let renewal = try await stores[0].leases.renewAll()
            #expect(renewal.liveKeepers == 3)
            let plan = LeasePlan.plan(held: renewal.held.count, sites: sites.count, liveKeepers: renewal.liveKeepers)
            #expect(plan == LeasePlan(share: 4, acquire: 0, release: 8))
            for lease in renewal.held.prefix(plan.release) { #expect(try await stores[0].leases.release(lease)) }
            // The others see them available and take their share, each under the next epoch.
            for store in stores.dropFirst() {
                let seen = try await store.leases.renewAll()
                let offered = store === stores[1] ? 8 : 4
                #expect(seen.available.count == offered)
                let share = LeasePlan.plan(held: 0, sites: sites.count, liveKeepers: seen.liveKeepers).acquire
                let taken = try await store.leases.acquireAvailable(among: seen.available.map(\.site), limit: share)
                #expect(taken.count == 4)
                #expect(taken.allSatisfy { $0.epoch == 2 })
            }
            let holders = try await fleet.sql("SELECT count(DISTINCT holder) FROM sessionkeeper_leases WHERE valid_until > now()")
            #expect(holders == "3")
        }
    }

    // MARK: Propagation

    @Test func aChangeReachesTheOtherKeepers() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(2) { stores in
            let changes = stores[1].changes()
            let lease = try #require(try await stores[0].leases.acquire("wiki"))
            let record = SessionRecord(cookies: [], lastLogin: Date(timeIntervalSince1970: 1_700_000_000), expiresAt: nil, userAgent: "A")
            try await stores[0].sessions(fencedBy: lease).save(record, site: "wiki")
            try await stores[0].items.set(Array("x".utf8), for: ItemReference(.credential, "token"))
            var seen: [StoreRowChange] = []
            for await change in changes {
                seen.append(change)
                if seen.count == 2 { break }
            }
            #expect(seen.map(\.subject) == [.site("wiki"), .secret("token")])
            #expect(seen[0].session == record)
            #expect(seen[0].version < seen[1].version)
        }
    }

    @Test func aChangeMadeWhileTheListenerIsCutIsDeliveredAfterTheReconnect() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(2) { stores in
            let changes = stores[1].changes()
            #expect(try await waitUntil(.seconds(10)) { stores[1].feed.counters.connections == 1 })
            // Cut the listener's connection, and write before it comes back.
            let terminated = try await fleet.sql(
                """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'sessionkeeper listener' AND datname = current_database()
                """)
            #expect(terminated == "2")
            try await stores[0].items.set(Array("while away".utf8), for: ItemReference(.credential, "missed"))
            var iterator = changes.makeAsyncIterator()
            let change = await iterator.next()
            #expect(change?.subject == .secret("missed"))
            #expect(stores[1].feed.counters.connections >= 2)
        }
    }

    @Test func removalsAreAnnouncedWithTheirNames() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(2) { stores in
            try await stores[0].items.set(Array("x".utf8), for: ItemReference(.credential, "gone"))
            let changes = stores[1].changes()
            #expect(try await stores[0].items.remove(ItemReference(.credential, "gone")))
            var iterator = changes.makeAsyncIterator()
            var change = await iterator.next()
            // The set may be read back first when the listener's start raced it.
            if change?.removed == false { change = await iterator.next() }
            #expect(change?.subject == .secret("gone"))
            #expect(change?.removed == true)
        }
    }

    // MARK: Reachability

    @Test func aStoppedDatabaseIsReportedOnceAndRecoveredFrom() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        try await fleet.withStores(1, lease: .seconds(3)) { stores in
            let store = stores[0]
            try await store.items.set(Array("v".utf8), for: ItemReference(.credential, "kept"))
            try await fleet.server.stop(mode: "immediate")
            do throws(PostgresStoreError) {
                _ = try await store.leases.renewAll()
                Issue.record("a renewal succeeded with the database stopped")
            } catch {
                #expect(error.kind == .unreachable)
            }
            await #expect(throws: VaultError.self) { try await store.items.value(of: ItemReference(.credential, "kept")) }
            guard case let .unreachable(_, reason) = store.reachability.current else {
                Issue.record("reachability is \(store.reachability.current)")
                return
            }
            #expect(!reason.isEmpty)
            // Several more failed attempts while it stays down: still one log line.
            try await Task.sleep(for: .seconds(2))
            for _ in 0..<3 { _ = try? await store.leases.renewAll() }

            try await fleet.server.startServer()
            #expect(try await waitUntil(.seconds(20)) { store.reachability.current.isReachable })
            #expect(try await waitUntil(.seconds(20)) { (try? await store.items.value(of: ItemReference(.credential, "kept"))) == Array("v".utf8) })
            _ = try await store.leases.renewAll()
        }
        #expect(fleet.log.lines(containing: "store unreachable").count == 1)
        #expect(fleet.log.lines(containing: "store reachable again").count == 1)
    }

    @Test func aPasswordNeverAppearsInAnErrorOrALogLine() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        let password = "S3cr3t-pw-7Qz"
        _ = try await fleet.sql("CREATE ROLE fleetuser LOGIN PASSWORD 'another-one'")
        try await fleet.server.requirePassword(for: "fleetuser")
        let text = "postgres://fleetuser:\(password)@/\(fleet.database)?host=\(fleet.server.folder)&port=\(fleet.server.port)"
        let url = try DatabaseURL(parsing: text)
        #expect(!url.description.contains(password))
        #expect(!"\(PostgresStoreSettings(url: .literal(url)))".contains(password))
        let store = try PostgresStore(
            url: url, settings: PostgresStoreSettings(url: .literal(url)), key: fleet.key, logger: fleet.log.logger())
        var message = ""
        do {
            try await PostgresStore.withRunning(store, createIfMissing: true) { _ in }
        } catch {
            message = "\(error) \(String(reflecting: error))"
        }
        #expect(message.contains("authentication failed"), "\(message)")
        #expect(!message.contains(password))
        #expect(!store.reachability.current.description.contains(password))
        #expect(!fleet.log.all.contains { $0.contains(password) })
        // And a URL where no server listens at all.
        let nowhere = try DatabaseURL(parsing: "postgres://fleetuser:\(password)@/x?host=\(fleet.folder.path)&port=\(fleet.server.port)&connect_timeout=2")
        let gone = try PostgresStore(
            url: nowhere, settings: PostgresStoreSettings(url: .literal(nowhere)), key: fleet.key, logger: fleet.log.logger())
        var goneMessage = ""
        do {
            try await PostgresStore.withRunning(gone, createIfMissing: true) { _ in }
        } catch {
            goneMessage = "\(error) \(String(reflecting: error))"
        }
        #expect(goneMessage.contains("unreachable"), "\(goneMessage)")
        #expect(!goneMessage.contains(password))
        #expect(!fleet.log.all.contains { $0.contains(password) })
    }

    // MARK: Helpers

    private func keyringBytes(_ fleet: Fleet) async throws -> [UInt8] {
        let hexText = try await fleet.sql("SELECT encode(bytes, 'hex') FROM sessionkeeper_keyring")
        return bytes(fromHex: hexText)
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func bytes(fromHex text: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex, let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) {
        if let byte = UInt8(text[index..<next], radix: 16) { result.append(byte) }
        index = next
    }
    return result
}

/// `store migrate`'s copy, there and back.
@Suite(.postgres, .serialized)
struct StoreMigrationTests {
    @Test func aFolderVaultGoesIntoTheDatabaseAndBackUnchanged() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        let stateDirectory = fleet.folder.path("state")
        let vault = try Vault.open(stateDirectory: stateDirectory, key: fleet.key, createIfMissing: true)
        let sessions = (0..<5).map { index in
            SessionRecord(
                cookies: [Cookie(name: "sid", value: "value-\(index)", domain: "site\(index).example", path: "/")],
                lastLogin: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)), expiresAt: nil, userAgent: "UA")
        }
        for (index, record) in sessions.enumerated() {
            try await VaultSessionStore(vault: vault).save(record, site: "site\(index)")
        }
        let secrets = ["wiki/password": "pw-1", "mail/token": "tok-2", "totp/seed": "JBSWY3DPEHPK3PXP"]
        for (name, value) in secrets { try vault.set(Array(value.utf8), for: ItemReference(.credential, name)) }
        let seed = try vault.keys()

        // Into an empty database: the keyring and every item.
        let first = try await PostgresStore.withRunning(try fleet.store(), createIfMissing: false, seed: seed) { store in
            try await StoreMigration.copy(from: vault, to: store, seeded: store.storedKeyring)
        }
        #expect(counts(first) == "copied 5 3 0 0")
        // Again: nothing changes.
        let again = try await PostgresStore.withRunning(try fleet.store(), createIfMissing: false, seed: seed) { store in
            try await StoreMigration.copy(from: vault, to: store, seeded: store.storedKeyring)
        }
        #expect(counts(again) == "alreadyThere 0 0 8 0")
        vault.close()

        // Back into a new folder: the same sessions and secrets, under the same master key.
        let back = fleet.folder.path("back")
        let returned = try await PostgresStore.withRunning(try fleet.store(), createIfMissing: false) { store in
            try await StoreMigration.copy(from: store, toFolder: back, key: fleet.key)
        }
        #expect(counts(returned) == "copied 5 3 0 0")
        let copy = try Vault.open(stateDirectory: back, key: fleet.key)
        defer { copy.close() }
        #expect(try copy.keys().hasSameMasterKeys(as: seed))
        for (index, record) in sessions.enumerated() {
            #expect(try await VaultSessionStore(vault: copy).load(site: "site\(index)") == record)
        }
        for (name, value) in secrets {
            #expect(try copy.value(of: ItemReference(.credential, name)) == Array(value.utf8))
        }
    }

    /// keyring, sessions, secrets, unchanged, problems.
    private func counts(_ summary: MigrationSummary) -> String {
        "\(summary.keyring) \(summary.sessions) \(summary.secrets) \(summary.unchanged) \(summary.problems.count)"
    }

    @Test func aDatabaseWithAnotherMasterKeyIsNotOverwritten() async throws {
        let fleet = try await Fleet.make()
        defer { fleet.cleanUp() }
        // The database got its own vault first.
        try await fleet.withStores(1) { stores in
            try await stores[0].items.set(Array("theirs".utf8), for: ItemReference(.credential, "shared"))
        }
        let otherKey = fleet.folder.path("folder.key")
        try VaultKey.createKeyFile(at: otherKey)
        let vault = try Vault.open(stateDirectory: fleet.folder.path("state"), key: .keyFile(path: otherKey), createIfMissing: true)
        defer { vault.close() }
        try vault.set(Array("mine".utf8), for: ItemReference(.credential, "shared"))
        // The folder's key does not even open the database's keyring.
        let store = try fleet.store(key: .keyFile(path: otherKey))
        await #expect(throws: PostgresStoreError.self) {
            try await PostgresStore.withRunning(store, createIfMissing: false, seed: try vault.keys()) { store in
                try await StoreMigration.copy(from: vault, to: store, seeded: store.storedKeyring)
            }
        }
        let value = try await fleet.withStores(1) { stores in try await stores[0].items.value(of: ItemReference(.credential, "shared")) }
        #expect(value == Array("theirs".utf8))
    }
}
