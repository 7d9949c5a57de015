import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

@Suite struct VaultTamperTests {
    @Test func aFlippedByteInAnyPositionIsDetectedAndNamesTheItem() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let target = ItemReference(.credential, "mail/password")
        let bystander = ItemReference(.siteState, "mail")
        try vault.set(bytes("pa55word!"), for: target)
        let path = itemFiles(vault)[0]
        try vault.set(bytes("cookie-state"), for: bystander)
        let original = readFile(path)
        for position in original.indices {
            for mask: UInt8 in [0x01, 0x80] {
                var damaged = original
                damaged[position] ^= mask
                writeFile(path, damaged)
                let error = #expect(throws: VaultError.self, "byte \(position) ^ \(mask)") { try vault.value(of: target) }
                #expect(error?.item == target)
                #expect(error?.description.contains("credential 'mail/password'") == true)
                #expect(error?.description.contains("pa55word") == false)
                #expect(try vault.value(of: bystander) == bytes("cookie-state"))
                let listing = try vault.list()
                #expect(listing.items == [bystander])
                #expect(listing.problems.count == 1)
            }
        }
        writeFile(path, original)
        #expect(try vault.value(of: target) == bytes("pa55word!"))
    }

    @Test func twoItemsFilesSwappedAreDetected() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let first = ItemReference(.credential, "one")
        let second = ItemReference(.credential, "two")
        try vault.set(bytes("value-one"), for: first)
        try vault.set(bytes("value-two"), for: second)
        let files = itemFiles(vault)
        let (a, b) = (readFile(files[0]), readFile(files[1]))
        writeFile(files[0], b)
        writeFile(files[1], a)
        for item in [first, second] {
            let error = #expect(throws: VaultError.self) { try vault.value(of: item) }
            #expect(error?.reason == .tampered)
            #expect(error?.item == item)
        }
        #expect(try vault.list().problems.count == 2)
    }

    @Test func aCopyUnderTheSameKindButAnotherNameIsDetected() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        try vault.set(bytes("x"), for: ItemReference(.siteState, "same"))
        try vault.set(bytes("y"), for: ItemReference(.credential, "same"))
        let files = itemFiles(vault)
        writeFile(files[1], readFile(files[0]))
        #expect(try vault.list().problems.count == 1)
    }

    @Test func everyTruncationIsDetected() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let item = ItemReference(.siteState, "shop")
        try vault.set(bytes("state bytes"), for: item)
        let path = itemFiles(vault)[0]
        let original = readFile(path)
        for length in 0..<original.count {
            writeFile(path, Array(original.prefix(length)))
            let error = #expect(throws: VaultError.self, "length \(length)") { try vault.value(of: item) }
            #expect(error?.item == item)
            if length < ItemFile.minimumSize {
                #expect(error?.reason == .truncated(size: length))
            }
        }
    }

    @Test func foreignFilesAreReportedWithoutStoppingTheOthers() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let kept = ItemReference(.credential, "kept")
        try vault.set(bytes("v"), for: kept)
        writeFile(vault.folder + "/notes.txt", bytes("hello"))
        writeFile(vault.folder + "/" + String(repeating: "b", count: 64), bytes("PK\u{3}\u{4} some zip archive bytes here and more"))
        let listing = try vault.list()
        #expect(listing.items == [kept])
        #expect(listing.problems.count == 2)
        #expect(listing.problems.allSatisfy { $0.reason == .foreignFile })
    }

    @Test func anUnknownFormatVersionIsReportedAsSuch() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let item = ItemReference(.credential, "future")
        try vault.set(bytes("v"), for: item)
        let path = itemFiles(vault)[0]
        var content = readFile(path)
        content[4] = 3
        writeFile(path, content)
        let error = #expect(throws: VaultError.self) { try vault.value(of: item) }
        #expect(error?.reason == .unknownFormatVersion(3))
        #expect(error?.description.contains("credential 'future'") == true)
        #expect(error?.description.contains("newer") == true)
    }

    @Test func anItemWrittenUnderAnotherKeyIsReportedAsTampered() throws {
        let one = try TemporaryFolder()
        let two = try TemporaryFolder()
        defer { one.cleanUp(); two.cleanUp() }
        let first = try openWithKeyFile(one)
        let second = try openWithKeyFile(two)
        let item = ItemReference(.credential, "shared-name")
        try first.set(bytes("first"), for: item)
        try second.set(bytes("second"), for: item)
        // Same name, but the file names differ (keyed hash) and a copy does not authenticate.
        let foreign = readFile(itemFiles(second)[0])
        writeFile(itemFiles(first)[0], foreign)
        let error = #expect(throws: VaultError.self) { try first.value(of: item) }
        #expect(error?.reason == .tampered)
        #expect(itemFiles(first)[0].suffix(64) != itemFiles(second)[0].suffix(64))
    }

    /// Format 2 (the fleet's rows) seals a write counter into the header, authenticated with the rest: a row
    /// whose counter was changed does not open, and the counter a row claims can be read without the key.
    @Test func aWriteCounterIsSealedAndAuthenticated() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let vault = try openWithKeyFile(folder)
        let keys = try vault.keys()
        let item = ItemReference(.credential, "counted")
        let id = keys.itemID(of: item)
        var sealed = try keys.seal(bytes("value"), for: item, counter: 41)
        #expect(sealed[4] == 2)
        #expect(VaultKeys.writeCounter(of: sealed) == 41)
        guard case let .success(opened) = keys.open(sealed, id: id) else {
            Issue.record("a counted item did not open")
            return
        }
        #expect(opened.value == bytes("value") && opened.counter == 41 && opened.item == item)
        // Without a counter: format 1, counter 0.
        let plain = try keys.seal(bytes("value"), for: item)
        #expect(plain[4] == 1 && VaultKeys.writeCounter(of: plain) == nil)
        if case let .success(old) = keys.open(plain, id: id) { #expect(old.counter == 0) } else { Issue.record("format 1 did not open") }
        // A counter raised by hand (to pass an older row for a newer one) breaks the seal.
        sealed[16] = 42
        #expect(VaultKeys.writeCounter(of: sealed) == 42)
        if case .failure(let reason) = keys.open(sealed, id: id) { #expect(reason == .tampered) } else { Issue.record("a changed counter opened") }
    }
}
