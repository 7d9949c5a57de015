#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whole-file writes that are atomic and durable: a reader sees the old content or the new one, never a
/// mix, and after a crash the file holds one of them too.
public enum DurableFile {
    /// Writes `bytes` to a temporary file in the same folder, fsyncs it, renames it over `path`, then
    /// fsyncs the folder so the rename itself survives a power cut. The file gets exactly `mode`,
    /// whatever the umask.
    public static func write(_ bytes: some Collection<UInt8>, to path: String, mode: mode_t = 0o600) throws(SystemError) {
        let folder = parentFolder(of: path)
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
        do throws(SystemError) {
            try Syscall.fchmod(fd, mode, path: temporary)
            let array = Array(bytes)
            // withUnsafeBytes only rethrows untyped errors, so the failure is carried out as a value.
            let failure: SystemError? = array.withUnsafeBytes { buffer in
                do throws(SystemError) {
                    try Syscall.writeAll(fd, buffer, path: temporary)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
            try Syscall.fsync(fd, path: temporary)
            Syscall.close(fd)
        } catch {
            Syscall.close(fd)
            try? Syscall.unlink(temporary)
            throw error
        }
        do throws(SystemError) {
            try Syscall.rename(temporary, path)
        } catch {
            try? Syscall.unlink(temporary)
            throw error
        }
        try syncFolder(folder)
    }

    /// Reads a whole file.
    public static func read(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = try Syscall.open(path, O_RDONLY)
        defer { Syscall.close(fd) }
        let size = try Syscall.fstat(fd, path: path).size
        return try Syscall.readAll(fd, path: path, expectedSize: Int(size))
    }

    /// fsync of a folder, which makes renames and unlinks inside it durable.
    public static func syncFolder(_ folder: String) throws(SystemError) {
        let fd = try Syscall.open(folder, O_RDONLY | O_DIRECTORY)
        defer { Syscall.close(fd) }
        try Syscall.fsync(fd, path: folder)
    }

    /// Creates the folder and its missing parents; the last one gets exactly `mode` (0700 by default),
    /// whatever the umask.
    public static func makePrivateFolder(_ path: String, mode: mode_t = 0o700) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            try Syscall.mkdir(prefix, 0o755)
            prefix += "/"
        }
        try Syscall.chmod(path, mode)
    }

    static func parentFolder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }
}
