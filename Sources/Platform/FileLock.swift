#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Why a ``FileLock`` could not be taken.
public enum FileLockError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another process holds the lock; `holderPID` is the pid it wrote into the file (nil when it had
    /// not written it yet or the file holds something else).
    case held(path: String, holderPID: Int32?)
    case system(SystemError)

    public var description: String {
        switch self {
        case let .held(path, pid?):
            return "\(path) is locked by another process (pid \(pid)); only one process may use this state folder"
        case let .held(path, nil):
            return "\(path) is locked by another process; only one process may use this state folder"
        case let .system(error):
            return error.description
        }
    }
}

/// An exclusive advisory lock (flock(2)) on a file, held until ``release()`` or deinit. The holder writes
/// its pid into the file so that a second process can say who holds it, as `ssh-agent` and pid files do.
///
/// flock locks belong to the open file description: the descriptor is opened with O_CLOEXEC so child
/// processes never inherit (and keep alive) the lock.
public final class FileLock: Sendable {
    /// The lock file's path.
    public let path: String
    private let descriptor: Mutex<Int32?>

    private init(path: String, fd: Int32) {
        self.path = path
        self.descriptor = Mutex(fd)
    }

    /// Takes the lock without waiting, creating the file with mode 0600 if needed.
    public static func acquire(_ path: String) throws(FileLockError) -> FileLock {
        let fd: Int32
        do {
            fd = try Syscall.open(path, O_RDWR | O_CREAT, mode: 0o600)
        } catch {
            throw .system(error)
        }
        do {
            try Syscall.fchmod(fd, 0o600, path: path)
            guard try Syscall.flock(fd, LOCK_EX | LOCK_NB, path: path) else {
                let content = (try? Syscall.preadAll(fd, path: path)) ?? []
                Syscall.close(fd)
                let text = String(decoding: content, as: UTF8.self).trimmingWhitespace()
                throw FileLockError.held(path: path, holderPID: Int32(text))
            }
            try Syscall.ftruncate(fd, 0, path: path)
            try Syscall.pwriteAll(fd, Array("\(Syscall.processID)\n".utf8), at: 0, path: path)
        } catch let error as FileLockError {
            throw error
        } catch let error as SystemError {
            Syscall.close(fd)
            throw .system(error)
        } catch {
            Syscall.close(fd)
            throw .system(SystemError(call: "flock", path: path, errno: EIO))
        }
        return FileLock(path: path, fd: fd)
    }

    /// Releases the lock (closing the descriptor releases it). Calling it twice is harmless.
    public func release() {
        descriptor.withLock { fd in
            guard let open = fd else { return }
            // Empty the pid so a stale file does not name a process that no longer holds the lock.
            try? Syscall.ftruncate(open, 0, path: path)
            // Unlock explicitly before closing: a child being spawned by another thread may share this
            // open file description until its exec, and closing alone would leave the lock held by it.
            _ = try? Syscall.flock(open, LOCK_UN, path: path)
            Syscall.close(open)
            fd = nil
        }
    }

    deinit {
        release()
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
