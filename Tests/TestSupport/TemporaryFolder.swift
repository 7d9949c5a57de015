import Foundation

/// A fresh private folder (mode 0700) under the system's temporary folder, for one test.
///
/// It is removed by `cleanUp()`, called in a `defer` right after creation: an explicit call rather than a
/// `deinit`, because Swift may end an object's lifetime at its last use, which would remove the folder
/// while the paths taken from it are still in use.
public struct TemporaryFolder: Sendable {
    /// The folder, absolute.
    public let path: String

    /// Creates the folder; `label` (the calling function's name by default) makes it easy to recognise.
    public init(_ label: String = #function) throws {
        let safe = label.filter { $0.isLetter || $0.isNumber }.prefix(40)
        path = FileManager.default.temporaryDirectory.path + "/sk-test-\(safe)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// The folder as a file URL.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` (a relative path) inside the folder.
    public func path(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to the file `name` inside the folder with permission bits `mode`; returns its path.
    @discardableResult
    public func write(_ text: String, to name: String, mode: Int16 = 0o600) throws -> String {
        let file = path(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
        return file
    }

    /// Removes the folder and everything in it.
    public func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}
