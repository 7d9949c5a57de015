import Foundation
import Platform
import TestSupport
@testable import Vault

extension TemporaryFolder {
    /// The state folder a vault test uses (created by the vault).
    var state: String { path("state") }
    /// The key file a vault test uses (created by the vault).
    var keyFile: String { path("master.key") }
}

/// Cheap scrypt for tests; the real default is exercised by the passphrase round-trip test.
let fastScrypt = ScryptParameters(log2N: 10, r: 8, p: 1)

func openWithKeyFile(_ folder: TemporaryFolder, create: Bool = true) throws -> Vault {
    try Vault.open(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile), createIfMissing: create)
}

/// The item files in a vault folder (names of 64 hex digits).
func itemFiles(_ vault: Vault) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: vault.folder)) ?? [])
        .filter { Vault.isItemFileName($0) }
        .map { vault.folder + "/" + $0 }
        .sorted()
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func readFile(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }

func writeFile(_ path: String, _ content: [UInt8]) { try! Data(content).write(to: URL(fileURLWithPath: path)) }

func mode(of path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue ?? -1
}

/// Whether `needle` occurs anywhere in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
        if Array(haystack[start..<(start + needle.count)]) == needle { return true }
    }
    return false
}

/// Every byte of every file under `path`.
func allBytes(under path: String) -> [[UInt8]] {
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return [] }
    var result: [[UInt8]] = []
    for case let relative as String in enumerator {
        let full = path + "/" + relative
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
            result.append(readFile(full))
        }
    }
    return result
}
