import Foundation
import TestSupport
import Testing

@testable import Platform

/// Key bytes in pages of their own, left out of core files.
@Suite struct SecretBytesTests {
    /// The `VmFlags` of the mapping of `/proc/self/smaps` that holds `address`.
    static func flags(at address: UInt) throws -> [String] {
        // Read to the end: /proc files report a size of 0, and a read sized by it would stop short.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
            } else if inside, line.hasPrefix("VmFlags:") {
                return fields.dropFirst().map(String.init)
            }
        }
        return []
    }

    @Test func keyBytesLiveInPagesCoreFilesLeaveOut() throws {
        let key: [UInt8] = (0..<32).map { UInt8($0 * 7 % 256) }
        let secret = try key.withUnsafeBytes { try SecretBytes(copying: $0) }
        #expect(secret.count == 32)
        #expect(secret.withUnsafeBytes { Array($0) } == key)
        let flags = try Self.flags(at: secret.address)
        #expect(flags.contains("dd"), "VmFlags: \(flags)")
        // Read-only once written: no "wr" flag.
        #expect(flags.contains("rd") && !flags.contains("wr"), "VmFlags: \(flags)")
        #expect(secret.address % 4096 == 0, "a mapping of its own")
    }
}

/// The environment entry of the vault's passphrase, taken out of the process and wiped.
@Suite(.serialized) struct ProcessSecretsTests {
    @Test func takingAVariableWipesItsBytesAndUnsetsIt() throws {
        let name = "SK_PROCESS_SECRETS_TEST"
        setenv(name, "value-wiped-1", 1)
        var found: UnsafeMutablePointer<CChar>?
        var index = 0
        while let candidate = environ[index] {
            if String(cString: candidate).hasPrefix(name + "=") { found = candidate }
            index += 1
        }
        let entry = try #require(found)
        let length = strlen(entry)
        #expect(ProcessSecrets.takeFromEnvironment(name) == "value-wiped-1")
        #expect(getenv(name) == nil)
        #expect(ProcessInfo.processInfo.environment[name] == nil)
        // The bytes where "NAME=value" was are zeros now.
        #expect(UnsafeRawBufferPointer(start: entry, count: length).allSatisfy { $0 == 0 })
        #expect(ProcessSecrets.takeFromEnvironment(name) == nil)
    }
}

/// `fs.protected_symlinks` for the links a replacement follows itself.
@Suite struct ProtectedSymbolicLinkTests {
    @Test func aLinkOfAnotherUserInAStickyWorldWritableFolderIsNotFollowed() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let shared = folder.path("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: shared)
        let ours = try folder.write("# Netscape HTTP Cookie File\n", to: "jar.txt")
        let link = shared + "/jar.txt"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: ours)
        #expect(lchown(link, 65534, 65534) == 0)

        let refused = try #require(throws: FileReplaceError.self) { try DurableFile.lockForReplace(link, readLimit: 1 << 20) }
        #expect(refused == .untrustedSymbolicLink(path: link, link: link, owner: 65534))
        #expect(refused.description.contains("the symbolic link \(link) belongs to uid 65534, in a sticky folder that others may write"))
        #expect(try String(contentsOfFile: ours, encoding: .utf8) == "# Netscape HTTP Cookie File\n", "the target is untouched")

        // The caller's own link there is followed, and so is another user's link in a folder that is not sticky.
        #expect(lchown(link, getuid(), getgid()) == 0)
        try DurableFile.lockForReplace(link, readLimit: 1 << 20).release()
        try FileManager.default.setAttributes([.posixPermissions: 0o0777], ofItemAtPath: shared)
        #expect(lchown(link, 65534, 65534) == 0)
        try DurableFile.lockForReplace(link, readLimit: 1 << 20).release()
        // In a sticky folder that belongs to the link's owner, it is followed too.
        try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: shared)
        #expect(chown(shared, 65534, 65534) == 0)
        try DurableFile.lockForReplace(link, readLimit: 1 << 20).release()
    }
}
