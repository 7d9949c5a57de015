#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a file holding a secret was refused.
public enum PrivateFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Group or others may access the file (as ssh refuses a loose private key).
    case accessibleByOthers(path: String, mode: mode_t)
    /// Another user owns the file.
    case foreignOwner(path: String, owner: uid_t)
    case notRegularFile(path: String)
    case tooLarge(path: String, size: Int64, limit: Int)
    case system(SystemError)

    public var description: String {
        switch self {
        case let .accessibleByOthers(path, mode):
            let octal = String(mode, radix: 8)
            let who = mode & 0o070 != 0 ? "group or others" : "others"
            return "\(path) has mode 0\(octal): \(who) can access it; run `chmod 600 \(path)`"
        case let .foreignOwner(path, owner):
            return "\(path) belongs to uid \(owner), not to this user (uid \(Syscall.userID))"
        case let .notRegularFile(path):
            return "\(path) is not a regular file"
        case let .tooLarge(path, size, limit):
            return "\(path) is \(size) bytes, more than the \(limit) bytes allowed"
        case let .system(error):
            return error.description
        }
    }
}

/// Reading files that hold secrets (key files, passphrase files, credential files), refused unless only
/// their owner can access them.
public enum PrivateFile {
    /// Reads a file whose mode gives group and others no access and which this user (or root) owns.
    /// With `allowingGroup`, group access (and a file owned by another member of the group) is
    /// accepted and only others are refused. The checks run on the open descriptor (fstat), so the
    /// file checked is the file read.
    public static func read(_ path: String, limit: Int = 1 << 20, allowingGroup: Bool = false) throws(PrivateFileError) -> [UInt8] {
        let fd: Int32
        do { fd = try Syscall.open(path, O_RDONLY) } catch { throw .system(error) }
        defer { Syscall.close(fd) }
        let status: FileStatus
        do { status = try Syscall.fstat(fd, path: path) } catch { throw .system(error) }
        guard status.isRegularFile else { throw .notRegularFile(path: path) }
        let forbidden: mode_t = allowingGroup ? 0o007 : 0o077
        if status.mode & forbidden != 0 { throw .accessibleByOthers(path: path, mode: status.mode) }
        let me = Syscall.userID
        if !allowingGroup && status.ownerUID != me && status.ownerUID != 0 {
            throw .foreignOwner(path: path, owner: status.ownerUID)
        }
        if status.size > Int64(limit) { throw .tooLarge(path: path, size: status.size, limit: limit) }
        do { return try Syscall.readAll(fd, path: path) } catch { throw .system(error) }
    }
}
