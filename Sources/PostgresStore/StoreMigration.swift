import Vault

/// What `sessionkeeper store migrate` did: counts, never a value.
public struct MigrationSummary: Sendable {
    /// Where the keyring went: copied, or the destination already held the same master keys.
    public enum Keyring: Sendable, Hashable {
        case copied
        case alreadyThere
    }

    public var keyring: Keyring
    /// Sessions written to the destination.
    public var sessions = 0
    /// Secrets written to the destination.
    public var secrets = 0
    /// Items the destination already held with the same value.
    public var unchanged = 0
    /// Items of the source that could not be read (not copied).
    public var problems: [VaultError] = []
}

/// Copies a vault's items between the vault folder and the fleet's database (`sessionkeeper store migrate`,
/// SPEC section 11), so a single machine can grow into a fleet and back.
///
/// - The keyring goes first: when the destination has none, the source's keyring is stored as it is (the
///   same master keys, so both sides read the same items); when it has one, its master keys must be the
///   same, or nothing is copied.
/// - Then every session and secret the destination lacks, or holds with another value, is written; items
///   it already holds unchanged are left alone, so running the copy again changes nothing.
/// - Item writes to the database are not fenced: migrate before the fleet's keepers run.
public enum StoreMigration {
    /// The error when the destination holds a vault under other master keys.
    static func differentKeys(_ destination: String) -> VaultError {
        VaultError(.keySource(
            "\(destination) already holds a vault with a different master key; refusing to overwrite it "
                + "(every keeper of a fleet shares one master key: copy the key file, credential or passphrase)"))
    }

    /// The folder's vault into the database that `store` reaches. Run it inside
    /// ``PostgresStore/withRunning(_:createIfMissing:seed:_:)`` with `seed: vault.keys()`, so that an empty
    /// database receives the folder's keyring.
    public static func copy(from vault: Vault, to store: PostgresStore, seeded: Bool) async throws(VaultError) -> MigrationSummary {
        let folderKeys = try vault.keys()
        let databaseKeys: VaultKeys
        do { databaseKeys = try store.keys() } catch { throw error.vaultError }
        guard databaseKeys.hasSameMasterKeys(as: folderKeys) else { throw differentKeys(store.url.place) }
        return try await copyItems(from: vault.background, to: store.items, keyring: seeded ? .copied : .alreadyThere)
    }

    /// The database's vault into the folder `stateDirectory`, creating the folder's vault with the
    /// database's keyring when it has none.
    public static func copy(
        from store: PostgresStore, toFolder stateDirectory: String, key: MasterKeySource
    ) async throws(VaultError) -> MigrationSummary {
        let databaseKeys: VaultKeys
        do { databaseKeys = try store.keys() } catch { throw error.vaultError }
        let existed = Vault.exists(stateDirectory: stateDirectory)
        let vault = try Vault.open(stateDirectory: stateDirectory, key: key, seedingWith: databaseKeys)
        defer { vault.close() }
        guard try vault.keys().hasSameMasterKeys(as: databaseKeys) else { throw differentKeys(vault.folder) }
        return try await copyItems(from: store.items, to: vault.background, keyring: existed ? .alreadyThere : .copied)
    }

    private static func copyItems(
        from source: any ItemStore, to destination: any ItemStore, keyring: MigrationSummary.Keyring
    ) async throws(VaultError) -> MigrationSummary {
        var summary = MigrationSummary(keyring: keyring)
        for kind in ItemKind.allCases {
            let found = try await source.contents(of: kind)
            let present = try await destination.contents(of: kind)
            summary.problems += found.problems
            for (name, value) in found.values.sorted(by: { $0.key < $1.key }) {
                if present.values[name] == value {
                    summary.unchanged += 1
                    continue
                }
                try await destination.set(value, for: ItemReference(kind, name))
                switch kind {
                case .siteState: summary.sessions += 1
                case .credential: summary.secrets += 1
                }
            }
        }
        return summary
    }
}
