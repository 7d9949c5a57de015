import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

@Suite struct FileLockTests {
    @Test func aVaultIsOpenedTwiceAndTheDaemonLockOnlyOnce() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let second = try openWithKeyFile(folder)
        try vault.set(bytes("v"), for: ItemReference(.credential, "c"))
        #expect(try second.value(of: ItemReference(.credential, "c")) == bytes("v"))
        #expect(!FileManager.default.fileExists(atPath: folder.state + "/lock"))

        let lock = try StateFolderLock.acquire(stateDirectory: folder.state)
        let error = #expect(throws: VaultError.self) { try StateFolderLock.acquire(stateDirectory: folder.state) }
        #expect(error?.description.contains("pid \(getpid())") == true)
        #expect(String(decoding: readFile(folder.state + "/lock"), as: UTF8.self) == "\(getpid())\n")
        lock.release()
        #expect(readFile(folder.state + "/lock").isEmpty)
        try StateFolderLock.acquire(stateDirectory: folder.state).release()
    }

    @Test func sharedLocksExcludeOnlyExclusiveOnes() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.path + "/shared.lock"
        let first = try FileLock.acquire(path, mode: .shared, waitingUpTo: .zero)
        let second = try FileLock.acquire(path, mode: .shared, waitingUpTo: .zero)
        #expect(throws: FileLockError.held(path: path, holderPID: nil)) { try FileLock.acquire(path, mode: .exclusive, waitingUpTo: .milliseconds(20)) }
        first.release()
        second.release()
        let exclusive = try FileLock.acquire(path, mode: .exclusive, waitingUpTo: .zero)
        #expect(throws: FileLockError.held(path: path, holderPID: getpid())) { try FileLock.acquire(path, mode: .shared, waitingUpTo: .milliseconds(20)) }
        exclusive.release()
    }

    @Test func aLockIsReleasedWhenItsOwnerGoesAway() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.path + "/lock"
        do {
            let lock = try FileLock.acquire(path)
            #expect(throws: FileLockError.held(path: path, holderPID: getpid())) { try FileLock.acquire(path) }
            _ = lock
        }
        let again = try FileLock.acquire(path)
        again.release()
        again.release()
    }
}
