#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the system calls the project uses: each retries on EINTR and throws a
/// ``SystemError`` carrying errno and the path. Nothing else in the project calls these functions directly.
public enum Syscall {
    @discardableResult
    static func retryingOnInterrupt<T: BinaryInteger>(
        _ call: String, path: String?, _ body: () -> T
    ) throws(SystemError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw SystemError(call: call, path: path, errno: code)
        }
    }

    /// open(2) with O_CLOEXEC added.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> Int32 {
        try retryingOnInterrupt("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    public static func close(_ fd: Int32) {
        // close(2) must not be retried on EINTR on Linux: the descriptor is already released.
        _ = Glibc.close(fd)
    }

    /// Writes all of `bytes`, looping over short writes.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let written = try retryingOnInterrupt("write", path: path) {
                Glibc.write(fd, bytes.baseAddress!.advanced(by: offset), bytes.count - offset)
            }
            offset += written
        }
    }

    /// Reads the whole file into memory. `expectedSize` (from fstat) sizes the read buffer so that a
    /// small file costs one small read; the loop still reads to the end whatever the file holds.
    public static func readAll(_ fd: Int32, path: String?, expectedSize: Int? = nil) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: expectedSize.map { min(max($0 + 1, 512), 64 * 1024) } ?? 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in Glibc.read(fd, buffer.baseAddress, buffer.count) }
            if count < 0 {
                let code = Glibc.errno
                if code == EINTR { continue }
                throw SystemError(call: "read", path: path, errno: code)
            }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }

    public static func fsync(_ fd: Int32, path: String?) throws(SystemError) {
        try retryingOnInterrupt("fsync", path: path) { Glibc.fsync(fd) }
    }

    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        try retryingOnInterrupt("rename", path: to) { Glibc.rename(from, to) }
    }

    public static func unlink(_ path: String) throws(SystemError) {
        try retryingOnInterrupt("unlink", path: path) { Glibc.unlink(path) }
    }

    public static func fchmod(_ fd: Int32, _ mode: mode_t, path: String?) throws(SystemError) {
        try retryingOnInterrupt("fchmod", path: path) { Glibc.fchmod(fd, mode) }
    }

    public static func chmod(_ path: String, _ mode: mode_t) throws(SystemError) {
        try retryingOnInterrupt("chmod", path: path) { Glibc.chmod(path, mode) }
    }

    /// mkdir(2); an existing folder is not an error.
    public static func mkdir(_ path: String, _ mode: mode_t) throws(SystemError) {
        if Glibc.mkdir(path, mode) == 0 { return }
        let code = Glibc.errno
        if code == EEXIST { return }
        throw SystemError(call: "mkdir", path: path, errno: code)
    }

    /// stat(2) of a path (following links).
    public static func stat(_ path: String) throws(SystemError) -> FileStatus {
        var info = Glibc.stat()
        guard lstatFollowing(path, &info) == 0 else { throw SystemError(call: "stat", path: path, errno: Glibc.errno) }
        return FileStatus(info)
    }

    /// fstat(2) of an open descriptor.
    public static func fstat(_ fd: Int32, path: String?) throws(SystemError) -> FileStatus {
        var info = Glibc.stat()
        try retryingOnInterrupt("fstat", path: path) { Glibc.fstat(fd, &info) }
        return FileStatus(info)
    }
}

/// stat(2) under another name: inside `Syscall`, `stat` would name the struct, not the function.
private func lstatFollowing(_ path: String, _ info: UnsafeMutablePointer<Glibc.stat>) -> Int32 {
    stat(path, info)
}

/// What stat(2) says about a file, in the terms the project needs.
public struct FileStatus: Sendable, Hashable {
    public var mode: mode_t
    public var ownerUID: uid_t
    public var ownerGID: gid_t
    public var size: Int64
    public var isDirectory: Bool
    public var isRegularFile: Bool

    init(_ info: Glibc.stat) {
        mode = info.st_mode & 0o7777
        ownerUID = info.st_uid
        ownerGID = info.st_gid
        size = Int64(info.st_size)
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        isRegularFile = (info.st_mode & S_IFMT) == S_IFREG
    }

    /// True when group or others may read, write or execute the file.
    public var isAccessibleByOthers: Bool { mode & 0o077 != 0 }
}

extension Syscall {
    /// Whether child `pid` of this process has exited, without reaping it (waitid(2) with WNOHANG and WNOWAIT):
    /// true for a zombie, and for a pid that is no longer this process's child (already reaped).
    static func childHasExited(_ pid: Int32) -> Bool {
        var info = siginfo_t()
        while true {
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 {
                // WNOHANG leaves si_pid zero while the child runs.
                return info._sifields._sigchld.si_pid != 0
            }
            if Glibc.errno == EINTR { continue }
            return Glibc.errno == ECHILD
        }
    }
}
