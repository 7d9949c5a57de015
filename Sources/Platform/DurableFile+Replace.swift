#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a path names, for messages that say why a file was refused.
public enum FileKind: Sendable, Hashable, CustomStringConvertible {
    case regularFile, directory, characterDevice, blockDevice, fifo, socket, symbolicLink, other

    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regularFile
        case S_IFDIR: self = .directory
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFLNK: self = .symbolicLink
        default: self = .other
        }
    }

    public var description: String {
        switch self {
        case .regularFile: "a regular file"
        case .directory: "a directory"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .fifo: "a FIFO (named pipe)"
        case .socket: "a socket"
        case .symbolicLink: "a symbolic link"
        case .other: "not a regular file"
        }
    }
}

/// Why a file could not be replaced.
public enum FileReplaceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path (after following symbolic links, `target`) names something other than a regular file.
    case notRegularFile(path: String, target: String, kind: FileKind)
    /// Following the symbolic links took more than ``DurableFile/maxSymbolicLinkHops`` hops (a loop).
    case symbolicLinkLoop(path: String)
    /// `link`, in a sticky folder that others may write (`/tmp`), belongs to `owner`, who is neither this user
    /// nor the folder's owner: the kernel's `fs.protected_symlinks` rule, applied to the links this process
    /// follows itself.
    case untrustedSymbolicLink(path: String, link: String, owner: uid_t)
    case system(SystemError)

    public var description: String {
        switch self {
        case let .notRegularFile(path, target, kind):
            path == target ? "\(path) is \(kind), not a regular file" : "\(path) leads to \(target), which is \(kind), not a regular file"
        case let .symbolicLinkLoop(path): "\(path): the symbolic links loop"
        case let .untrustedSymbolicLink(path, link, owner):
            "\(path): not followed: the symbolic link \(link) belongs to uid \(owner), in a sticky folder that others may write, "
                + "so someone else could have placed it to make this write land elsewhere (as the kernel's fs.protected_symlinks "
                + "refuses); remove the link or name the file it leads to"
        case let .system(error): error.description
        }
    }
}

/// Where a replacement will write: the regular file a path leads to.
public struct ReplaceTarget: Sendable, Hashable {
    /// The path as given.
    public var path: String
    /// The path with every symbolic link followed: the file that is replaced.
    public var target: String
    /// Whether the target exists now (a missing one is created).
    public var exists: Bool
}

/// Replacing a file in place of the old one without clobbering what it is: symbolic links are followed
/// (the link stays and its target gets the new content, as an editor or `curl -c` does), anything that
/// is not a regular file is refused, and a lock on the file serialises read-modify-write cycles of
/// cooperating processes.
extension DurableFile {
    /// How many symbolic links a path may pass through (Linux's own limit for path resolution).
    public static let maxSymbolicLinkHops = 40

    /// Follows `path`'s symbolic links to the regular file they lead to (or to the missing file they
    /// name), without creating or opening anything. Refuses anything but a regular file, a loop of links,
    /// and a folder the process could not write the replacement into.
    public static func replaceTarget(_ path: String) throws(FileReplaceError) -> ReplaceTarget {
        var current = path
        var hops = 0
        while true {
            var info = Glibc.stat()
            if Glibc.lstat(current, &info) != 0 {
                let code = Glibc.errno
                guard code == ENOENT else { throw .system(SystemError(call: "lstat", path: current, errno: code)) }
                try requireWritableFolder(of: current)
                return ReplaceTarget(path: path, target: current, exists: false)
            }
            let kind = FileKind(mode: info.st_mode)
            guard kind == .symbolicLink else {
                guard kind == .regularFile else { throw .notRegularFile(path: path, target: current, kind: kind) }
                try requireWritableFolder(of: current)
                if Glibc.access(current, W_OK) != 0 {
                    throw .system(SystemError(call: "access", path: current, errno: Glibc.errno))
                }
                return ReplaceTarget(path: path, target: current, exists: true)
            }
            hops += 1
            guard hops <= maxSymbolicLinkHops else { throw .symbolicLinkLoop(path: path) }
            try requireTrustedLink(current, owner: info.st_uid, path: path)
            let destination = try readLink(current)
            current = destination.hasPrefix("/") ? destination : parentFolder(of: current) + "/" + destination
        }
    }

    /// Opens the regular file `path` leads to under an exclusive lock (flock(2), waiting for it), creating
    /// it empty with `mode` when missing, and reads its content (at most `readLimit` bytes). The lock is
    /// the one every replacement through this function takes, so two processes updating the same file
    /// one after the other both see the other's change: after the lock is granted the path is checked to
    /// still name the locked file (a previous holder's rename replaces it), and if not the open starts over.
    public static func lockForReplace(_ path: String, readLimit: Int, mode: mode_t = 0o600) throws(FileReplaceError) -> LockedFile {
        while true {
            let target = try replaceTarget(path)
            let fd: Int32
            var created = false
            // O_NONBLOCK: opening a FIFO that slipped in after the check must not wait for a writer.
            do throws(SystemError) {
                fd = try Syscall.open(target.target, O_RDWR | O_NOFOLLOW | O_NONBLOCK)
            } catch where error.errno == ENOENT || error.errno == ELOOP {
                // Missing (created below), or replaced by a link since the check (followed again).
                if error.errno == ELOOP { continue }
                do throws(SystemError) {
                    fd = try Syscall.open(target.target, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
                    created = true
                } catch where error.errno == EEXIST {
                    continue
                } catch {
                    throw .system(error)
                }
            } catch {
                throw .system(error)
            }
            var info = Glibc.stat()
            guard Glibc.fstat(fd, &info) == 0 else {
                let code = Glibc.errno
                Syscall.close(fd)
                throw .system(SystemError(call: "fstat", path: target.target, errno: code))
            }
            let kind = FileKind(mode: info.st_mode)
            guard kind == .regularFile else {
                Syscall.close(fd)
                throw .notRegularFile(path: path, target: target.target, kind: kind)
            }
            do throws(SystemError) {
                _ = try Syscall.flock(fd, LOCK_EX, path: target.target)
            } catch {
                Syscall.close(fd)
                throw .system(error)
            }
            // The file locked must still be the one the path names: a previous holder may have renamed a
            // new file over it (or removed the one it created) while this process waited.
            var now = Glibc.stat()
            guard Glibc.lstat(target.target, &now) == 0, now.st_dev == info.st_dev, now.st_ino == info.st_ino else {
                Syscall.close(fd)
                continue
            }
            let contents: [UInt8]
            do throws(SystemError) {
                contents = try read(descriptor: fd, path: target.target, limit: readLimit)
            } catch {
                Syscall.close(fd)
                if created { try? Syscall.unlink(target.target) }
                throw .system(error)
            }
            return LockedFile(path: path, target: target.target, contents: contents, created: created, fd: fd)
        }
    }

    private static func readLink(_ path: String) throws(FileReplaceError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { Glibc.readlink(path, $0.baseAddress!, $0.count - 1) }
        }
        guard count >= 0 else { throw .system(SystemError(call: "readlink", path: path, errno: Glibc.errno)) }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// `fs.protected_symlinks` (Documentation/admin-guide/sysctl/fs.rst): in a sticky folder that others may
    /// write, a symbolic link is followed only when it belongs to the follower or to the folder's owner. The
    /// kernel applies it to links it follows during open(2); this process follows links itself (to replace
    /// the target, not the link), so it applies the same rule.
    private static func requireTrustedLink(_ link: String, owner: uid_t, path: String) throws(FileReplaceError) {
        let folder: FileStatus
        do throws(SystemError) { folder = try Syscall.stat(parentFolder(of: link)) } catch { throw .system(error) }
        let stickyAndWorldWritable = folder.mode & 0o1002 == 0o1002
        guard stickyAndWorldWritable, owner != Glibc.geteuid(), owner != folder.ownerUID else { return }
        throw .untrustedSymbolicLink(path: path, link: link, owner: owner)
    }

    /// The replacement is a new file renamed over the old one, so its folder must exist and be writable.
    private static func requireWritableFolder(of path: String) throws(FileReplaceError) {
        let folder = parentFolder(of: path)
        let status: FileStatus
        do throws(SystemError) { status = try Syscall.stat(folder) } catch { throw .system(error) }
        guard status.isDirectory else {
            throw .system(SystemError(call: "stat", path: folder, errno: ENOTDIR))
        }
        guard Glibc.access(folder, W_OK | X_OK) == 0 else {
            throw .system(SystemError(call: "access", path: folder, errno: Glibc.errno))
        }
    }
}

/// A regular file held under an exclusive flock(2) lock, with the content it had when locked. Replace
/// it with ``replace(with:mode:)``; ``release()`` (or deinit) unlocks it, and removes it again when this
/// process created it empty and never wrote it.
public final class LockedFile {
    /// The path as given.
    public let path: String
    /// The regular file locked and replaced (symbolic links followed).
    public let target: String
    /// The file's content when the lock was taken (empty for a file just created).
    public let contents: [UInt8]
    /// True when the file did not exist and this process created it.
    public let created: Bool
    private var descriptor: Int32?
    private var replaced = false

    init(path: String, target: String, contents: [UInt8], created: Bool, fd: Int32) {
        self.path = path
        self.target = target
        self.contents = contents
        self.created = created
        self.descriptor = fd
    }

    /// Replaces the file atomically and durably (``DurableFile/write(_:to:mode:)`` on the target) while
    /// the lock is held.
    public func replace(with bytes: some Collection<UInt8>, mode: mode_t = 0o600) throws(SystemError) {
        try DurableFile.write(bytes, to: target, mode: mode)
        replaced = true
    }

    /// Unlocks the file. Calling it twice is harmless.
    public func release() {
        guard let fd = descriptor else { return }
        if created && !replaced { try? Syscall.unlink(target) }
        _ = try? Syscall.flock(fd, LOCK_UN, path: target)
        Syscall.close(fd)
        descriptor = nil
    }

    deinit {
        release()
    }
}
