import Platform

/// The daemon's lock on its state folder (SPEC section 6: one daemon per state folder): an exclusive
/// flock(2) on `state_dir/lock`, which holds the holder's pid, kept for the daemon's life. The kernel
/// releases it when the holder dies, however it dies.
///
/// Only the daemon takes it. The vault itself takes no long-lived lock, so the CLI's `secret`, `vault`
/// and `login` keep working while the daemon runs.
public final class StateFolderLock: Sendable {
    /// `state_dir/lock`.
    public let path: String
    private let lock: FileLock

    private init(lock: FileLock) {
        self.path = lock.path
        self.lock = lock
    }

    /// Takes the lock without waiting, creating the state folder (mode 0700) and the lock file (0600)
    /// when missing. Fails with ``VaultError/Reason/locked(_:)`` naming the holder's pid when another
    /// process holds it.
    public static func acquire(stateDirectory: String) throws(VaultError) -> StateFolderLock {
        do {
            try DurableFile.makePrivateFolder(stateDirectory)
        } catch {
            throw VaultError(.io(error), file: stateDirectory)
        }
        do {
            return StateFolderLock(lock: try FileLock.acquire(stateDirectory + "/lock"))
        } catch {
            throw VaultError(.locked(error))
        }
    }

    /// Releases the lock (also done when the object goes away). Calling it twice is harmless.
    public func release() {
        lock.release()
    }
}
