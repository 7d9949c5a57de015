#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a file was not read by ``BoundedRead``. ``reason`` is for a message that already names the file;
/// ``description`` names it.
public enum BoundedReadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file holds more than the caller's limit (or, for a device, never ends).
    case tooLarge(path: String, limit: Int)
    /// A directory, a device, a FIFO or a socket: not something the product reads as a file.
    case notRegularFile(path: String, kind: String)
    /// open(2), fstat(2) or read(2) failed.
    case system(SystemError)

    /// What went wrong, in the user's words, without the path.
    public var reason: String {
        switch self {
        case let .tooLarge(_, limit):
            return "it is larger than \(BoundedRead.describe(bytes: limit)), the most this file may hold"
        case let .notRegularFile(_, kind):
            return "it is \(kind), not a regular file"
        case let .system(error):
            switch error.errno {
            case ELOOP: return "its path is a loop of symbolic links"
            case ENOENT: return "no such file"
            case EACCES, EPERM: return "permission denied (the file or a folder on its path is not readable)"
            case ENOTDIR: return "a component of its path is not a folder"
            case EISDIR: return "it is a folder, not a regular file"
            case ENAMETOOLONG: return "its path is too long"
            default: return String(cString: strerror(error.errno)).lowercased()
            }
        }
    }

    public var path: String? {
        switch self {
        case let .tooLarge(path, _), let .notRegularFile(path, _): path
        case let .system(error): error.path
        }
    }

    public var description: String {
        if let path { return "cannot read \(path): \(reason)" }
        return "cannot read: \(reason)"
    }
}

/// Reading a file the user named (a config, a site file, a jar, a key file) with a size limit, so that
/// `/dev/zero`, a FIFO or a huge file ends in a clear error rather than in memory growing without bound.
public enum BoundedRead {
    /// The whole content of the regular file at `path`, at most `limit` bytes.
    ///
    /// The file is opened without blocking (a FIFO with no writer would hang otherwise) and checked with
    /// fstat on the open descriptor, so the file checked is the file read. A file that grows past the
    /// limit while it is read is refused too: the read stops at `limit + 1` bytes.
    public static func file(_ path: String, limit: Int) throws(BoundedReadError) -> [UInt8] {
        let fd: Int32
        do { fd = try Syscall.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY) } catch { throw .system(error) }
        defer { Syscall.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system(SystemError(call: "fstat", path: path, errno: errno)) }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else { throw .notRegularFile(path: path, kind: kind(of: type)) }
        if Int64(info.st_size) > Int64(limit) { throw .tooLarge(path: path, limit: limit) }
        let bytes: [UInt8]
        do { bytes = try descriptor(fd, path: path, limit: limit) } catch { throw .system(error) }
        guard bytes.count <= limit else { throw .tooLarge(path: path, limit: limit) }
        return bytes
    }

    /// Reads `fd` to its end or to `limit + 1` bytes, whichever comes first: a result longer than
    /// `limit` means "too large" to the caller, and nothing more was read.
    public static func descriptor(_ fd: Int32, path: String?, limit: Int) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while result.count <= limit {
            let wanted = min(chunk.count, limit + 1 - result.count)
            let count = chunk.withUnsafeMutableBytes { buffer in read(fd, buffer.baseAddress, wanted) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw SystemError(call: "read", path: path, errno: code)
            }
            if count == 0 { break }
            result.append(contentsOf: chunk[0..<count])
        }
        return result
    }

    /// "1 MiB", "64 KiB", "512 bytes".
    public static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    static func kind(of type: mode_t) -> String {
        switch type {
        case S_IFDIR: "a folder"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a named pipe"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }
}

/// Reads that stop at a size limit for paths that may be a FIFO or a device on purpose (`-` as standard
/// input, a jar file under a lock): the same loop as ``BoundedRead/descriptor(_:path:limit:)``, with "too
/// large" as a ``SystemError`` with errno `EFBIG` (the call is `read`).
extension DurableFile {
    /// Reads the file (or FIFO, or device) at `path`, at most `limit` bytes.
    public static func read(_ path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let fd = try Syscall.open(path, O_RDONLY)
        defer { Syscall.close(fd) }
        return try read(descriptor: fd, path: path, limit: limit)
    }

    /// Reads an open descriptor to its end from its current position, at most `limit` bytes; `path`
    /// names it in errors.
    public static func read(descriptor fd: Int32, path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let bytes = try BoundedRead.descriptor(fd, path: path, limit: limit)
        if bytes.count > limit { throw SystemError(call: "read", path: path, errno: EFBIG) }
        return bytes
    }
}
