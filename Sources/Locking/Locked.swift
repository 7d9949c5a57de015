#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a lock: every read and write of it happens inside ``withLock(_:)``.
///
/// The one in-process lock of the project, in place of the standard library's `Synchronization.Mutex`: on Linux
/// that one locks through the kernel's futex from code the sanitizers do not instrument, so ThreadSanitizer sees
/// the accesses inside `withLock` but not the lock between them, and reports every one as a race (a ten-line
/// program shows it; docs/RELIABILITY.md). A `pthread_mutex_t`, which ThreadSanitizer intercepts, lets it judge
/// the project's own code. Uncontended, both cost one atomic operation to lock and one to unlock.
///
/// Not recursive: calling ``withLock(_:)`` again from inside its body deadlocks.
public final class Locked<Value>: @unchecked Sendable {
    /// Allocated apart from the object so that its address never changes (pthread mutexes must not move).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock; what `body` returns or throws is passed on.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
