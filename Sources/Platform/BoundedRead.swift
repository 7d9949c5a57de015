#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads that stop at a size limit, for files a user names: a path can name /dev/zero, a FIFO that never
/// ends or a file of gigabytes, and none of them may make the process read without end.
extension DurableFile {
    /// Reads a whole file (or FIFO, or device) of at most `limit` bytes. More than `limit` bytes throws
    /// a ``SystemError`` with errno `EFBIG` (the call is `read`), after reading at most `limit + 1` bytes.
    public static func read(_ path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let fd = try Syscall.open(path, O_RDONLY)
        defer { Syscall.close(fd) }
        return try read(descriptor: fd, path: path, limit: limit)
    }

    /// Reads an open descriptor to its end (standard input, a locked file), at most `limit` bytes, from
    /// its current position. `path` names it in errors.
    public static func read(descriptor fd: Int32, path: String, limit: Int) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let wanted = min(chunk.count, limit + 1 - result.count)
            let count = chunk.withUnsafeMutableBytes { buffer in Glibc.read(fd, buffer.baseAddress, wanted) }
            if count < 0 {
                let code = Glibc.errno
                if code == EINTR { continue }
                throw SystemError(call: "read", path: path, errno: code)
            }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
            if result.count > limit { throw SystemError(call: "read", path: path, errno: EFBIG) }
        }
    }
}
