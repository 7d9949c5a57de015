#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A new folder only its owner can enter (mode 0700, made by mkdtemp(3) under `$TMPDIR`, else `/tmp`),
/// for files that hold secrets for a short while, such as the cookie file of `sessionkeeper exec`.
public struct PrivateTemporaryFolder: Sendable {
    /// The folder, absolute.
    public let path: String

    /// Creates the folder, its name starting with `prefix`.
    public static func create(prefix: String) throws(SystemError) -> PrivateTemporaryFolder {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array("\(base.hasSuffix("/") ? String(base.dropLast()) : base)/\(prefix)XXXXXX".utf8CString)
        // mkdtemp fills in the X's of the template it is handed and returns it: the folder's path.
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) } }
        guard let made else { throw SystemError(call: "mkdtemp", path: base, errno: errno) }
        return PrivateTemporaryFolder(path: made)
    }

    /// The path of the file `name` inside the folder.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Removes every file in the folder, then the folder. Only plain files are expected inside (what the
    /// owner put there); anything that cannot be removed is left and reported.
    public func remove() throws(SystemError) {
        for name in try Syscall.listDirectory(path) {
            try Syscall.unlinkIfPresent(file(name))
        }
        if rmdir(path) != 0, errno != ENOENT { throw SystemError(call: "rmdir", path: path, errno: errno) }
    }
}
