#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The system calls behind locks, folder listings and private files.
extension Syscall {
    /// flock(2). Returns false instead of throwing when `nonBlocking` and another open file description
    /// holds a conflicting lock.
    public static func flock(_ fd: Int32, _ operation: Int32, path: String?) throws(SystemError) -> Bool {
        while true {
            if lockFile(fd, operation) == 0 { return true }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK { return false }
            throw SystemError(call: "flock", path: path, errno: code)
        }
    }

    /// ftruncate(2).
    public static func ftruncate(_ fd: Int32, _ length: Int64, path: String?) throws(SystemError) {
        try retryingOnInterrupt("ftruncate", path: path) { Glibc.ftruncate(fd, off_t(length)) }
    }

    /// Writes all of `bytes` at `offset`, looping over short writes.
    public static func pwriteAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int64, path: String?) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let start = done
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.pwrite(fd, buffer.baseAddress!.advanced(by: start), buffer.count - start, off_t(offset) + off_t(start))
            }
            if written < 0 {
                let code = Glibc.errno
                if code == EINTR { continue }
                throw SystemError(call: "pwrite", path: path, errno: code)
            }
            done += written
        }
    }

    /// Reads the whole file from offset 0, whatever the descriptor's position.
    public static func preadAll(_ fd: Int32, path: String?) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let offset = off_t(result.count)
            let count = chunk.withUnsafeMutableBytes { buffer in Glibc.pread(fd, buffer.baseAddress, buffer.count, offset) }
            if count < 0 {
                let code = Glibc.errno
                if code == EINTR { continue }
                throw SystemError(call: "pread", path: path, errno: code)
            }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }

    /// The names in a folder, without `.` and `..`, in no particular order.
    public static func listDirectory(_ path: String) throws(SystemError) -> [String] {
        guard let directory = Glibc.opendir(path) else {
            throw SystemError(call: "opendir", path: path, errno: Glibc.errno)
        }
        defer { Glibc.closedir(directory) }
        var names: [String] = []
        while true {
            Glibc.errno = 0
            guard let entry = Glibc.readdir(directory) else {
                let code = Glibc.errno
                if code != 0 { throw SystemError(call: "readdir", path: path, errno: code) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// lstat(2): the link itself when `path` is a symbolic link.
    public static func lstat(_ path: String) throws(SystemError) -> FileStatus {
        var info = Glibc.stat()
        try retryingOnInterrupt("lstat", path: path) { Glibc.lstat(path, &info) }
        return FileStatus(info)
    }

    /// realpath(3): `path` made absolute with every symbolic link, `.` and `..` resolved; nil when it does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { Glibc.free(resolved) }
        return String(cString: resolved)
    }

    /// `path` (absolute) with the symbolic links of its longest existing part resolved and the rest appended as
    /// written: where a file that does not exist yet would be created.
    public static func resolvingLinks(_ path: String) -> String {
        var existing = path
        var rest: [Substring] = []
        while existing != "/" && !existing.isEmpty {
            if let real = realPath(existing) {
                return rest.isEmpty ? real : (real == "/" ? "" : real) + "/" + rest.reversed().joined(separator: "/")
            }
            guard let slash = existing.lastIndex(of: "/") else { break }
            rest.append(existing[existing.index(after: slash)...])
            existing = slash == existing.startIndex ? "/" : String(existing[..<slash])
        }
        return path
    }

    /// True when `path` names something (a dangling symbolic link counts).
    public static func exists(_ path: String) -> Bool {
        var info = Glibc.stat()
        return Glibc.lstat(path, &info) == 0
    }

    /// unlink(2) where a missing file is not an error; returns whether a file was removed.
    @discardableResult
    public static func unlinkIfPresent(_ path: String) throws(SystemError) -> Bool {
        if Glibc.unlink(path) == 0 { return true }
        let code = Glibc.errno
        if code == ENOENT { return false }
        throw SystemError(call: "unlink", path: path, errno: code)
    }

    /// The calling process's id.
    public static var processID: Int32 { Glibc.getpid() }

    /// The calling process's real user id.
    public static var userID: uid_t { Glibc.getuid() }

    /// kill(2).
    public static func kill(_ pid: Int32, _ signal: Int32) throws(SystemError) {
        try retryingOnInterrupt("kill", path: nil) { Glibc.kill(pid, signal) }
    }
}

/// flock(2) under a name that the `flock` struct of the C headers does not shadow.
private func lockFile(_ fd: Int32, _ operation: Int32) -> Int32 {
    flock(fd, operation)
}
