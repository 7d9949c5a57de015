#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Locking

/// Why a ``FileLock`` could not be taken.
public enum FileLockError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another process holds the lock; `holderPID` is the pid it wrote into the file (nil when it had
    /// not written it yet, holds the lock shared, or the file holds something else).
    case held(path: String, holderPID: Int32?)
    case system(SystemError)

    public var description: String {
        switch self {
        case let .held(path, pid?):
            return "\(path) is locked by another process (pid \(pid))"
        case let .held(path, nil):
            return "\(path) is locked by another process"
        case let .system(error):
            return error.description
        }
    }
}

/// An advisory lock (flock(2)) on a file, held until ``release()`` or deinit. An exclusive holder writes
/// its pid into the file so that a waiting process can say who holds it, as `ssh-agent` and pid files do.
///
/// flock locks belong to the open file description: each lock opens the file anew (with O_CLOEXEC, so
/// child processes never inherit and keep alive the lock), so two locks conflict even inside one process.
public final class FileLock: Sendable {
    /// Who may hold the lock beside the holder.
    public enum Mode: Sendable {
        /// No one else (LOCK_EX).
        case exclusive
        /// Other shared holders, never an exclusive one (LOCK_SH).
        case shared
    }

    /// The lock file's path.
    public let path: String
    private let mode: Mode
    private let descriptor: Locked<Int32?>

    private init(path: String, fd: Int32, mode: Mode) {
        self.path = path
        self.mode = mode
        self.descriptor = Locked(fd)
    }

    /// Takes an exclusive lock without waiting, creating the file with mode 0600 if needed.
    public static func acquire(_ path: String) throws(FileLockError) -> FileLock {
        try acquire(path, mode: .exclusive, waitingUpTo: .zero)
    }

    /// Takes the lock, creating the file with mode 0600 if needed. While another process holds a
    /// conflicting lock it retries for up to `timeout` (every 1 to 2 ms: flock(2) itself cannot time
    /// out), then fails with ``FileLockError/held(path:holderPID:)``.
    public static func acquire(_ path: String, mode: Mode, waitingUpTo timeout: Duration) throws(FileLockError) -> FileLock {
        let fd: Int32
        do {
            fd = try Syscall.open(path, O_RDWR | O_CREAT, mode: 0o600)
        } catch {
            throw .system(error)
        }
        var acquired = false
        do throws(SystemError) {
            try Syscall.fchmod(fd, 0o600, path: path)
            let operation = (mode == .exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: timeout)
            var pause: UInt32 = 1_000
            acquired = try Syscall.flock(fd, operation, path: path)
            while !acquired, clock.now < deadline {
                usleep(pause)
                pause = min(pause * 2, 2_000)
                acquired = try Syscall.flock(fd, operation, path: path)
            }
            if acquired, mode == .exclusive {
                try Syscall.ftruncate(fd, 0, path: path)
                try Syscall.pwriteAll(fd, Array("\(Syscall.processID)\n".utf8), at: 0, path: path)
            }
        } catch {
            Syscall.close(fd)
            throw .system(error)
        }
        guard acquired else {
            let content = (try? Syscall.preadAll(fd, path: path)) ?? []
            Syscall.close(fd)
            let text = String(decoding: content, as: UTF8.self).trimmingWhitespace()
            throw .held(path: path, holderPID: Int32(text))
        }
        return FileLock(path: path, fd: fd, mode: mode)
    }

    /// Releases the lock (closing the descriptor releases it). Calling it twice is harmless.
    public func release() {
        descriptor.withLock { fd in
            guard let open = fd else { return }
            // Empty the pid so a stale file does not name a process that no longer holds the lock.
            if mode == .exclusive { try? Syscall.ftruncate(open, 0, path: path) }
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
