import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

@Suite struct VaultRotationTests {
    @Test func rotateReencryptsEveryItemUnderANewMasterKey() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        for index in 0..<12 { try vault.set(bytes("value \(index)"), for: ItemReference(.credential, "c\(index)")) }
        let before = Set(itemFiles(vault))
        let keyBefore = readFile(folder.keyFile)
        let summary = try vault.rotate()
        #expect(summary == RotationSummary(keyID: 2, reencrypted: 12))
        #expect(vault.keyGenerations == [2])
        let after = Set(itemFiles(vault))
        #expect(after.count == 12)
        #expect(before.isDisjoint(with: after))
        #expect(readFile(folder.keyFile) == keyBefore)
        for file in after { #expect(Array(readFile(file)[5..<9]) == [0, 0, 0, 2]) }
        vault.close()
        let reopened = try openWithKeyFile(folder, create: false)
        for index in 0..<12 {
            #expect(try reopened.value(of: ItemReference(.credential, "c\(index)")) == bytes("value \(index)"))
        }
        #expect(try reopened.rotate().keyID == 3)
    }

    @Test func anInterruptedRotateStillOpensAndTheNextRunFinishes() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        for index in 0..<10 { try vault.set(bytes("value \(index)"), for: ItemReference(.siteState, "s\(index)")) }
        let partial = try vault.rotate(stoppingAfter: 4)
        #expect(partial.reencrypted == 4)
        vault.close()

        let resumed = try openWithKeyFile(folder, create: false)
        #expect(resumed.keyGenerations == [1, 2])
        #expect(try resumed.list().items.count == 10)
        for index in 0..<10 {
            #expect(try resumed.value(of: ItemReference(.siteState, "s\(index)")) == bytes("value \(index)"))
        }
        // Writes during the unfinished rotation go to the new generation and retire the old file.
        try resumed.set(bytes("changed"), for: ItemReference(.siteState, "s9"))
        try resumed.set(bytes("new item"), for: ItemReference(.siteState, "s10"))
        try resumed.remove(ItemReference(.siteState, "s0"))
        #expect(itemFiles(resumed).count == 10)
        let finished = try resumed.rotate()
        #expect(finished.keyID == 2)
        #expect(resumed.keyGenerations == [2])
        #expect(itemFiles(resumed).allSatisfy { Array(readFile($0)[5..<9]) == [0, 0, 0, 2] })
        #expect(try resumed.value(of: ItemReference(.siteState, "s9")) == bytes("changed"))
        #expect(try resumed.value(of: ItemReference(.siteState, "s10")) == bytes("new item"))
        #expect(try resumed.value(of: ItemReference(.siteState, "s0")) == nil)
        #expect(try resumed.list().items.count == 10)
    }

    @Test func aCrashBetweenWritingTheNewFileAndRemovingTheOldOneKeepsTheNewValue() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let item = ItemReference(.credential, "both")
        try vault.set(bytes("old value"), for: item)
        let oldFile = itemFiles(vault)[0]
        let oldBytes = readFile(oldFile)
        _ = try vault.rotate(stoppingAfter: 0)
        try vault.set(bytes("new value"), for: item)
        // Put the old generation's file back, as if its unlink had not reached the disk.
        writeFile(oldFile, oldBytes)
        #expect(itemFiles(vault).count == 2)
        #expect(try vault.value(of: item) == bytes("new value"))
        #expect(try vault.list().items == [item])
        try vault.rotate()
        #expect(itemFiles(vault).count == 1)
        #expect(try vault.value(of: item) == bytes("new value"))
    }

    @Test func rotateStopsOnUnreadableFilesAndKeepsBothGenerations() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("a"), for: ItemReference(.credential, "a"))
        try vault.set(bytes("b"), for: ItemReference(.credential, "b"))
        let damaged = itemFiles(vault)[0]
        var content = readFile(damaged)
        content[content.count - 1] ^= 0xff
        writeFile(damaged, content)
        let error = #expect(throws: VaultError.self) { try vault.rotate() }
        #expect(error?.reason == .rotationIncomplete(unreadableFiles: [damaged]))
        #expect(vault.keyGenerations == [1, 2])
        try FileManager.default.removeItem(atPath: damaged)
        try vault.rotate()
        #expect(vault.keyGenerations == [2])
        #expect(try vault.list().items.count == 1)
    }
}
