import Logging
internal import PostgresNIO

/// The store's tables, created and upgraded by the keepers themselves (docs/FLEET.md, "Schema").
///
/// Every table is prefixed `sessionkeeper_`, so the store can share a database. Items (sessions, secrets)
/// and the keyring hold the vault's bytes as they are; `version` comes from one sequence and is set,
/// with the writing transaction's id, by a trigger on every insert and update, whichever statement
/// wrote the row; another trigger announces each change with NOTIFY.
enum Schema {
    /// The NOTIFY channel; payloads are `site:VERSION`, `secret:VERSION` or `keyring:VERSION`, and a keeper's
    /// ``LoginRequest`` `login-KIND:ID`.
    static let channel = "sessionkeeper_changes"
    /// pg_advisory_xact_lock's key for migrations ("SKSCHEMA" in ASCII): two keepers starting at once
    /// upgrade one after the other, and the second finds nothing left to do.
    static let migrationLock: Int64 = 0x534B_5343_4845_4D41

    struct Migration {
        let version: Int
        let statements: [String]
    }

    /// Each migration runs in the one transaction that also records its version.
    static let migrations: [Migration] = [
        Migration(version: 1, statements: [
            "CREATE SEQUENCE sessionkeeper_item_versions",
            """
            CREATE TABLE sessionkeeper_keyring (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                bytes bytea NOT NULL,
                version bigint NOT NULL DEFAULT 0,
                written_by bigint NOT NULL DEFAULT 0)
            """,
            """
            CREATE TABLE sessionkeeper_sessions (
                id bytea PRIMARY KEY CHECK (length(id) = 32),
                item bytea NOT NULL,
                present boolean NOT NULL,
                epoch bigint,
                version bigint NOT NULL DEFAULT 0,
                written_by bigint NOT NULL DEFAULT 0)
            """,
            """
            CREATE TABLE sessionkeeper_secrets (
                id bytea PRIMARY KEY CHECK (length(id) = 32),
                item bytea NOT NULL,
                present boolean NOT NULL,
                version bigint NOT NULL DEFAULT 0,
                written_by bigint NOT NULL DEFAULT 0)
            """,
            "CREATE INDEX sessionkeeper_sessions_version ON sessionkeeper_sessions (version)",
            "CREATE INDEX sessionkeeper_sessions_written_by ON sessionkeeper_sessions (written_by)",
            "CREATE INDEX sessionkeeper_secrets_version ON sessionkeeper_secrets (version)",
            "CREATE INDEX sessionkeeper_secrets_written_by ON sessionkeeper_secrets (written_by)",
            // The version and the writing transaction, set on every write: a listener reads back every row
            // newer than the last version it saw, plus those of transactions still running at that read
            // (ChangeFeed says why).
            """
            CREATE FUNCTION sessionkeeper_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                NEW.version := nextval('sessionkeeper_item_versions');
                NEW.written_by := pg_current_xact_id()::text::bigint;
                RETURN NEW;
            END $$
            """,
            """
            CREATE FUNCTION sessionkeeper_announce() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('\(channel)', TG_ARGV[0] || ':' || NEW.version);
                RETURN NULL;
            END $$
            """,
            "CREATE TRIGGER stamp BEFORE INSERT OR UPDATE ON sessionkeeper_keyring FOR EACH ROW EXECUTE FUNCTION sessionkeeper_stamp()",
            "CREATE TRIGGER stamp BEFORE INSERT OR UPDATE ON sessionkeeper_sessions FOR EACH ROW EXECUTE FUNCTION sessionkeeper_stamp()",
            "CREATE TRIGGER stamp BEFORE INSERT OR UPDATE ON sessionkeeper_secrets FOR EACH ROW EXECUTE FUNCTION sessionkeeper_stamp()",
            "CREATE TRIGGER announce AFTER INSERT OR UPDATE ON sessionkeeper_keyring FOR EACH ROW EXECUTE FUNCTION sessionkeeper_announce('keyring')",
            "CREATE TRIGGER announce AFTER INSERT OR UPDATE ON sessionkeeper_sessions FOR EACH ROW EXECUTE FUNCTION sessionkeeper_announce('site')",
            "CREATE TRIGGER announce AFTER INSERT OR UPDATE ON sessionkeeper_secrets FOR EACH ROW EXECUTE FUNCTION sessionkeeper_announce('secret')",
        ]),
        Migration(version: 2, statements: [
            // One row per site ever leased; a release or an expiry leaves it (valid_until in the past), so a
            // site's epoch never goes back.
            """
            CREATE TABLE sessionkeeper_leases (
                site_id bytea PRIMARY KEY CHECK (length(site_id) = 32),
                holder text NOT NULL,
                epoch bigint NOT NULL,
                valid_until timestamptz NOT NULL)
            """,
            "CREATE INDEX sessionkeeper_leases_holder ON sessionkeeper_leases (holder)",
            "CREATE INDEX sessionkeeper_leases_valid_until ON sessionkeeper_leases (valid_until)",
            // The keepers of the fleet and their heartbeats, renewed by the statement that renews leases.
            """
            CREATE TABLE sessionkeeper_keepers (
                keeper_id text PRIMARY KEY,
                host text NOT NULL,
                pid integer NOT NULL,
                started_at timestamptz NOT NULL DEFAULT now(),
                seen_until timestamptz NOT NULL)
            """,
        ]),
    ]

    /// The version this SessionKeeper creates and reads.
    static var latest: Int { migrations.last?.version ?? 0 }

    /// Brings the schema to `target` (the latest by default) in one transaction under the migration lock.
    /// Returns the version found before.
    @discardableResult
    static func migrate(_ client: PostgresClient, to target: Int = latest, logger: Logger) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS sessionkeeper_schema (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    version integer NOT NULL)
                """, logger: logger)
            var found = 0
            for try await version in try await connection.query("SELECT version FROM sessionkeeper_schema", logger: logger).decode(Int.self) {
                found = version
            }
            guard found <= latest else { throw PostgresStoreError(.schemaTooNew(found: found, known: latest), "") }
            for migration in migrations where migration.version > found && migration.version <= target {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            if target > found {
                try await connection.query(
                    """
                    INSERT INTO sessionkeeper_schema (version) VALUES (\(target))
                    ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version
                    """, logger: logger)
                logger.notice("store schema upgraded", metadata: ["from": "\(found)", "to": "\(target)"])
            }
            return found
        }
    }
}
