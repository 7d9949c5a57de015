import Foundation
import Platform
import Synchronization
import TestSupport
import Testing
@testable import Vault

/// Several users of one vault at once (SPEC section 6). Two `Vault` objects in one process behave as two
/// processes would: neither holds a lock, and the keyring lock is a flock on a file each opens anew.
/// The CLI tests at the end use real processes.
@Suite struct SharedVaultTests {
    @Test func eachUserSeesWhatAnotherWrote() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let first = try openWithKeyFile(folder)
        let second = try openWithKeyFile(folder, create: false)
        let item = ItemReference(.siteState, "wiki")
        try first.set(bytes("from the first"), for: item)
        #expect(try second.value(of: item) == bytes("from the first"))
        try second.set(bytes("from the second"), for: item)
        #expect(try first.value(of: item) == bytes("from the second"))
        #expect(try first.list().items == [item])
        #expect(try second.remove(item))
        #expect(try first.value(of: item) == nil)
        #expect(try first.list().items.isEmpty)
    }

    @Test func aUserThatMissedAnotherUsersRotationStillReadsAndWritesEveryItem() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let rotating = try openWithKeyFile(folder)
        for index in 0..<6 { try rotating.set(bytes("value \(index)"), for: ItemReference(.credential, "c\(index)")) }
        let stale = try openWithKeyFile(folder, create: false)
        #expect(try stale.value(of: ItemReference(.credential, "c0")) == bytes("value 0"))

        #expect(try rotating.rotate() == RotationSummary(keyID: 2, reencrypted: 6))
        // `stale` knows only generation 1, whose files are gone: it reads the keyring again.
        #expect(try stale.value(of: ItemReference(.credential, "c1")) == bytes("value 1"))
        let listing = try stale.list()
        #expect(listing.items.count == 6 && listing.problems.isEmpty)
        // Its writes use the generation the keyring holds now, so the items stay readable by everyone.
        try stale.set(bytes("written after the rotation"), for: ItemReference(.credential, "c2"))
        #expect(itemFiles(stale).allSatisfy { Array(readFile($0)[5..<9]) == [0, 0, 0, 2] })
        let fresh = try openWithKeyFile(folder, create: false)
        #expect(try fresh.value(of: ItemReference(.credential, "c2")) == bytes("written after the rotation"))
        #expect(try fresh.list().problems.isEmpty)
    }

    @Test func writesDuringAnotherUsersUnfinishedRotationSurviveItsEnd() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let rotating = try openWithKeyFile(folder)
        for index in 0..<10 { try rotating.set(bytes("value \(index)"), for: ItemReference(.siteState, "s\(index)")) }
        let writer = try openWithKeyFile(folder, create: false)
        _ = try rotating.rotate(stoppingAfter: 3)
        // The writer has not seen generation 2; under the keyring lock it reads the keyring and uses it.
        for index in 0..<10 where index.isMultiple(of: 2) {
            try writer.set(bytes("rewritten \(index)"), for: ItemReference(.siteState, "s\(index)"))
        }
        try writer.set(bytes("new"), for: ItemReference(.siteState, "s10"))
        #expect(try writer.remove(ItemReference(.siteState, "s1")))
        let finished = try rotating.rotate()
        #expect(finished.keyID == 2)
        #expect(writer.keyGenerations == [2])
        let fresh = try openWithKeyFile(folder, create: false)
        let listing = try fresh.list()
        #expect(listing.problems.isEmpty)
        #expect(listing.items.count == 10)
        for index in 0..<10 where index != 1 {
            let expected = index.isMultiple(of: 2) ? "rewritten \(index)" : "value \(index)"
            #expect(try fresh.value(of: ItemReference(.siteState, "s\(index)")) == bytes(expected))
        }
        #expect(try fresh.value(of: ItemReference(.siteState, "s10")) == bytes("new"))
        #expect(try fresh.value(of: ItemReference(.siteState, "s1")) == nil)
    }

    @Test func aRekeyElsewhereLeavesOpenUsersWorkingWithTheirMasterKeys() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let reader = try openWithKeyFile(folder)
        try reader.set(bytes("before the rekey"), for: ItemReference(.credential, "c"))
        let rekeying = try openWithKeyFile(folder, create: false)
        let newKey = MasterKeySource.passphrase(VaultPassphrase(bytes("the new passphrase")))
        try rekeying.rekey(to: newKey, scrypt: fastScrypt)

        #expect(try reader.value(of: ItemReference(.credential, "c")) == bytes("before the rekey"))
        try reader.set(bytes("after the rekey"), for: ItemReference(.credential, "d"))
        #expect(try reader.list().items.count == 2)
        // A keyring change needs the key that opens the keyring now.
        let rotate = #expect(throws: VaultError.self) { try reader.rotate() }
        #expect(rotate?.description.contains("re-sealed under another key") == true)
        #expect(rotate?.description.contains("key file \(folder.keyFile) no longer opens it") == true)
        let refused = #expect(throws: VaultError.self) { try openWithKeyFile(folder, create: false) }
        #expect(refused?.description.contains("the vault was created with a passphrase") == true)
        let reopened = try Vault.open(stateDirectory: folder.state, key: newKey)
        #expect(try reopened.value(of: ItemReference(.credential, "d")) == bytes("after the rekey"))
    }

    @Test func aKeyringLockHeldTooLongIsNamedAndReadsGoOn() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let setup = try openWithKeyFile(folder)
        try setup.set(bytes("stored"), for: ItemReference(.credential, "c"))
        let vault = try Vault.open(
            folder.state, .keyFile(path: folder.keyFile), .never, ScryptParameters(), [:], .milliseconds(300))
        let held = try FileLock.acquire(folder.state + "/keyring.lock")
        let write = #expect(throws: VaultError.self) { try vault.set(bytes("blocked"), for: ItemReference(.credential, "c")) }
        #expect(write?.reason == .keyringBusy(holderPID: getpid(), waited: .milliseconds(300)))
        #expect(write?.description.contains("keyring lock has been held by process \(getpid()) for more than 300 ms") == true)
        #expect(throws: VaultError.self) { try vault.rotate() }
        // Reading needs no lock.
        #expect(try vault.value(of: ItemReference(.credential, "c")) == bytes("stored"))
        #expect(try vault.list().items.count == 1)
        held.release()
        try vault.set(bytes("after"), for: ItemReference(.credential, "c"))
        #expect(try setup.value(of: ItemReference(.credential, "c")) == bytes("after"))
    }

    @Test func twoFirstRunsAtOnceMakeOneVaultAndTwoInitsOneWinner() async throws {
        for round in 0..<8 {
            let folder = try TemporaryFolder("firstRun\(round)")
            defer { folder.cleanUp() }
            let state = folder.state
            let keyFile = folder.keyFile
            let open = { @Sendable () throws(VaultError) -> Vault in
                try Vault.open(stateDirectory: state, key: .keyFile(path: keyFile), createIfMissing: true)
            }
            async let first = onDedicatedThread(open)
            async let second = onDedicatedThread(open)
            let (a, b) = try await (first, second)
            try a.set(bytes("one vault \(round)"), for: ItemReference(.credential, "c"))
            #expect(try b.value(of: ItemReference(.credential, "c")) == bytes("one vault \(round)"))
        }
        for round in 0..<8 {
            let folder = try TemporaryFolder("init\(round)")
            defer { folder.cleanUp() }
            let state = folder.state
            let keyFile = folder.keyFile
            let initialize = { @Sendable () -> Result<Vault, VaultError> in
                Result { () throws(VaultError) -> Vault in try Vault.initialize(stateDirectory: state, key: .keyFile(path: keyFile)) }
            }
            async let first = onDedicatedThread(initialize)
            async let second = onDedicatedThread(initialize)
            let results = await [first, second]
            let failures = results.compactMap { result -> VaultError? in
                if case let .failure(error) = result { return error }
                return nil
            }
            #expect(failures.map(\.reason) == [.alreadyInitialized], "round \(round)")
            #expect(try openWithKeyFile(folder, create: false).list().problems.isEmpty)
        }
    }

    @Test func temporaryFilesOfRunningWritersAreKeptAndThoseOfDeadOnesRemoved() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try openWithKeyFile(folder).close()
        let finished = try await runProgram("/bin/sh", ["-c", "echo $$"])
        let deadPID = try #require(Int32(finished.outputText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let name = String(repeating: "b", count: 64)
        let dead = folder.state + "/vault/\(name).tmp-\(deadPID)-1"
        let live = folder.state + "/vault/\(name).tmp-\(getpid())-2"
        writeFile(dead, [1])
        writeFile(live, [2])
        #expect(Vault.writerPID(ofTemporaryFile: "\(name).tmp-\(deadPID)-1") == deadPID)
        let vault = try openWithKeyFile(folder, create: false)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
        #expect(try vault.list().problems.isEmpty)
    }

    /// A key file's write cut short (the first run killed while creating `state_dir/master.key`) leaves its
    /// temporary file in the state folder, not in `vault/`: the next open removes it there too.
    @Test func aKeyFileWriteCutShortLeavesNoTemporaryFileInTheStateFolder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try openWithKeyFile(folder).close()
        let finished = try await runProgram("/bin/sh", ["-c", "echo $$"])
        let deadPID = try #require(Int32(finished.outputText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let dead = folder.state + "/master.key.tmp-\(deadPID)-1"
        let live = folder.state + "/master.key.tmp-\(getpid())-2"
        writeFile(dead, Array(repeating: 7, count: 16))
        writeFile(live, [2])
        let vault = try openWithKeyFile(folder, create: false)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
        #expect(try vault.list().problems.isEmpty)
    }

    /// The async calls run on the vault's own threads: with more writes waiting for the keyring lock
    /// than Swift's cooperative pool has threads, work on the pool still runs.
    @Test func waitingVaultCallsLeaveTheCooperativePoolFree() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let held = try FileLock.acquire(folder.state + "/keyring.lock")
        let blockedCount = min(8, max(2, ProcessInfo.processInfo.activeProcessorCount) + 2)
        let finishedWrites = SharedCounter()
        let background = vault.background
        let writes = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<blockedCount {
                    group.addTask {
                        try await background.set(bytes("value \(index)"), for: ItemReference(.siteState, "site\(index)"))
                        finishedWrites.add()
                    }
                }
                try await group.waitForAll()
            }
        }
        // Work that needs every thread of the pool at once, while the writes wait.
        let poolWork = await withTaskGroup(of: Int.self) { group in
            for index in 0..<(blockedCount * 2) { group.addTask { index } }
            return await group.reduce(0, +)
        }
        #expect(poolWork == (0..<(blockedCount * 2)).reduce(0, +))
        try await Task.sleep(for: .milliseconds(50))
        #expect(finishedWrites.value == 0)
        held.release()
        try await writes.value
        #expect(finishedWrites.value == blockedCount)
        let listing = try await background.list()
        #expect(listing.items.count == blockedCount)
        #expect(try await background.value(of: ItemReference(.siteState, "site0")) == bytes("value 0"))
        #expect(try await background.remove(ItemReference(.siteState, "site0")))
        #expect(try await background.names(of: .siteState).names.count == blockedCount - 1)
    }

    /// Many durable writes through the async calls while a task on the pool keeps counting.
    @Test func aTaskOnThePoolKeepsRunningDuringManyVaultWrites() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let background = try await BackgroundVault.open(
            stateDirectory: folder.state, key: .keyFile(path: folder.keyFile), createIfMissing: true).background
        let done = SharedCounter()
        let ticker = Task {
            var ticks = 0
            while done.value == 0 {
                ticks += 1
                await Task.yield()
            }
            return ticks
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<3 {
                group.addTask {
                    for round in 0..<40 {
                        try await background.set(bytes("w\(writer) r\(round)"), for: ItemReference(.siteState, "w\(writer)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        done.add()
        let ticks = await ticker.value
        // The ticker made progress while the writes ran (how much depends on the machine's load).
        #expect(ticks > 0)
        #expect(try await background.value(of: ItemReference(.siteState, "w2")) == bytes("w2 r39"))
    }
}

/// A count shared between a test's tasks.
final class SharedCounter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
