import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

@Suite struct VaultItemTests {
    @Test func storesReadsListsAndRemovesItemsOfBothKinds() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let password = ItemReference(.credential, "wiki/password")
        let site = ItemReference(.siteState, "wiki")
        try vault.set(bytes("correct horse"), for: password)
        try vault.set([0, 1, 2, 255], for: site)
        #expect(try vault.value(of: password) == bytes("correct horse"))
        #expect(try vault.value(of: site) == [0, 1, 2, 255])
        #expect(try vault.value(of: ItemReference(.credential, "wiki")) == nil)
        let listing = try vault.list()
        #expect(listing.items == [site, password])
        #expect(listing.problems.isEmpty)
        #expect(try vault.names(of: .credential).names == ["wiki/password"])

        try vault.set(bytes("battery staple"), for: password)
        #expect(try vault.value(of: password) == bytes("battery staple"))
        #expect(itemFiles(vault).count == 2)

        #expect(try vault.remove(password))
        #expect(try vault.remove(password) == false)
        #expect(try vault.value(of: password) == nil)
        #expect(try vault.list().items == [site])
    }

    @Test func contentsReadsEveryItemOfAKindInOnePassAndReportsDamagedOnes() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        for index in 0..<6 { try vault.set(bytes("state \(index)"), for: ItemReference(.siteState, "site\(index)")) }
        try vault.set(bytes("a credential"), for: ItemReference(.credential, "site0"))
        let damaged = try #require(itemFiles(vault).first)
        var content = readFile(damaged)
        content[15] ^= 0x20
        writeFile(damaged, content)
        let sites = try vault.contents(of: .siteState)
        let credentials = try vault.contents(of: .credential)
        #expect(sites.values.count + credentials.values.count == 6)
        #expect(sites.problems.count == 1)
        for (name, value) in sites.values { #expect(value == bytes("state \(name.dropFirst(4))")) }
        for (name, value) in credentials.values {
            #expect(name == "site0")
            #expect(value == bytes("a credential"))
        }
    }

    @Test func valuesSurviveClosingAndReopening() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        do {
            let vault = try openWithKeyFile(folder)
            try vault.set(bytes("s3cret"), for: ItemReference(.credential, "a"))
            vault.close()
            #expect(throws: VaultError.self) { try vault.value(of: ItemReference(.credential, "a")) }
        }
        let reopened = try openWithKeyFile(folder, create: false)
        #expect(try reopened.value(of: ItemReference(.credential, "a")) == bytes("s3cret"))
    }

    @Test func emptyValueAndLargeValueRoundTrip() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try vault.set([], for: ItemReference(.siteState, "empty"))
        try vault.set(big, for: ItemReference(.siteState, "big"))
        #expect(try vault.value(of: ItemReference(.siteState, "empty")) == [])
        #expect(try vault.value(of: ItemReference(.siteState, "big")) == big)
    }

    @Test func rejectsInvalidNamesAndOversizedValues() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        for name in ["", String(repeating: "x", count: 256), "tab\there", "new\nline"] {
            #expect(throws: VaultError.self) { try vault.set([1], for: ItemReference(.credential, name)) }
        }
        let tooBig = [UInt8](repeating: 7, count: Vault.maximumValueSize + 1)
        let error = #expect(throws: VaultError.self) { try vault.set(tooBig, for: ItemReference(.siteState, "huge")) }
        #expect(error?.reason == .valueTooLarge(size: tooBig.count))
        try vault.set([1], for: ItemReference(.credential, "ünïcode/ok-name_1"))
        #expect(try vault.value(of: ItemReference(.credential, "ünïcode/ok-name_1")) == [1])
    }

    @Test func folderRevealsNoNamesAndNoValuesAndModesArePrivate() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let secretValue = "hunter2-very-secret-value"
        try vault.set(bytes(secretValue), for: ItemReference(.credential, "bank/password"))
        try vault.set(bytes("session=abcdef0123456789"), for: ItemReference(.siteState, "bank"))
        let names = try FileManager.default.contentsOfDirectory(atPath: vault.folder)
        #expect(names.allSatisfy { !$0.contains("bank") && !$0.contains("password") })
        for file in allBytes(under: folder.state) {
            #expect(!contains(file, bytes(secretValue)))
            #expect(!contains(file, bytes("abcdef0123456789")))
            #expect(!contains(file, bytes("bank")))
        }
        #expect(mode(of: folder.state) == 0o700)
        #expect(mode(of: vault.folder) == 0o700)
        #expect(mode(of: folder.keyFile) == 0o600)
        #expect(mode(of: folder.state + "/keyring.lock") == 0o600)
        for name in names { #expect(mode(of: vault.folder + "/" + name) == 0o600, "\(name)") }
    }

    @Test func staleTemporaryFilesAreRemovedOnOpen() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        vault.close()
        // A pid no process has: the writer is gone.
        let stale = folder.state + "/vault/" + String(repeating: "a", count: 64) + ".tmp-\(Int32.max)-456"
        writeFile(stale, [1, 2, 3])
        let reopened = try openWithKeyFile(folder, create: false)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(try reopened.list().problems.isEmpty)
    }
}
