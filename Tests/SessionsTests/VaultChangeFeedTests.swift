import Foundation
import Sessions
import TestSupport
import Testing
import Vault

/// ``VaultChangeFeed`` on a real vault folder, written by a second `Vault` as another process writes it: what it
/// follows is reported by name, what it does not follow is not, and a rotation (items under new file names) changes
/// nothing of that.
@Suite struct VaultChangeFeedTests {
    /// Everything the feed reports until `expected` has been seen (or 10 s passed).
    static func collect(_ feed: VaultChangeFeed, until expected: Set<StoreChange>) async -> Set<StoreChange> {
        let seen = await withTaskGroup(of: Set<StoreChange>?.self) { group in
            group.addTask {
                var seen: Set<StoreChange> = []
                for await batch in feed.changes {
                    seen.formUnion(batch)
                    if expected.isSubset(of: seen) { break }
                }
                return seen
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return seen ?? []
    }

    @Test func followedSecretsAndSessionsAreReportedByNameAcrossARotation() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let state = folder.path("state")
        let key = MasterKeySource.keyFile(path: folder.path("master.key"))
        let daemonsVault = try Vault.open(stateDirectory: state, key: key, createIfMissing: true)
        defer { daemonsVault.close() }
        let feed = try VaultChangeFeed(vault: daemonsVault)
        defer { feed.stop() }
        feed.follow(sites: ["wiki"], secrets: ["wiki/password"])

        // Another process: its own Vault on the same folder.
        let other = try Vault.open(stateDirectory: state, key: key)
        defer { other.close() }
        try other.set(Array("not followed".utf8), for: ItemReference(.credential, "other/password"))
        try other.set(Array("hunter2".utf8), for: ItemReference(.credential, "wiki/password"))
        try other.set(Array("{}".utf8), for: ItemReference(.siteState, "wiki"))
        let expected: Set<StoreChange> = [.secret(name: "wiki/password"), .session(site: "wiki")]
        #expect(await Self.collect(feed, until: expected) == expected)

        // A rotation moves every item to a new file name; the feed computes them again when the keyring changes.
        _ = try other.rotate()
        try other.set(Array("correct horse".utf8), for: ItemReference(.credential, "wiki/password"))
        let afterRotation = await Self.collect(feed, until: [.secret(name: "wiki/password")])
        #expect(afterRotation.contains(.secret(name: "wiki/password")))
        #expect(!afterRotation.contains(.secret(name: "other/password")))
    }
}
