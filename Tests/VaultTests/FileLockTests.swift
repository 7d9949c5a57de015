import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

@Suite struct FileLockTests {
    @Test func aSecondOpenOfTheSameStateFolderIsRefusedNamingTheHolder() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let error = #expect(throws: VaultError.self) { try openWithKeyFile(folder) }
        #expect(error?.description.contains("pid \(getpid())") == true)
        #expect(String(decoding: readFile(folder.state + "/lock"), as: UTF8.self) == "\(getpid())\n")
        vault.close()
        _ = try openWithKeyFile(folder)
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
