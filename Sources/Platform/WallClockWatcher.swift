#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CLinux
import Foundation
import Locking
import Synchronization

/// Tells when the system's wall clock is set: `date -s`, `clock_settime(2)`, an NTP step, a VM restored from a
/// snapshot. A timerfd on `CLOCK_REALTIME` is armed with `TFD_TIMER_CANCEL_ON_SET` for a time far ahead; the
/// kernel cancels it on every set of the clock, and the read(2) a dedicated thread blocks in fails with
/// ECANCELED (timerfd_create(2)). There is no polling loop and no timer that fires: the thread wakes only when
/// the clock is set, and costs nothing in between.
///
/// Why it exists: timers run on the monotonic clock and cookie expiry on the wall clock, so a set clock
/// changes which sessions are over without any timer noticing. The kernel reports every set, even one to the
/// same second, so the reader decides whether the change matters by comparing the clocks itself.
///
/// ``changes`` yields once per set (sets close together may yield once). It finishes when ``stop()`` is called.
public final class WallClockWatcher: Sendable {
    /// One element per report of the kernel that the wall clock was set.
    public let changes: AsyncStream<Void>

    private let handle: TimerHandle

    /// The descriptor, shared by the watcher and its thread; nil once the thread closed it, so that a later
    /// ``stop()`` never touches a descriptor number the process has since reused.
    private final class TimerHandle: Sendable {
        let fd: Locked<Int32?>
        let stopping = Atomic<Bool>(false)
        init(fd: Int32) { self.fd = Locked(fd) }
    }

    /// How far ahead the timer is armed. It only has to lie beyond any time the clock is set to; if the clock
    /// is set past it anyway, the timer expires and is armed again from the new time.
    static let armAhead: Int64 = 100 * 365 * 86_400

    /// Starts watching. Throws when the kernel cannot report clock changes (no timerfd, as under some
    /// sandboxes); the caller then learns of a changed clock only when it next looks at it.
    public init() throws(SystemError) {
        let fd = clinux_timerfd_create_realtime()
        guard fd >= 0 else { throw SystemError(call: "timerfd_create", errno: errno) }
        guard Self.arm(fd) else {
            let code = errno
            Glibc.close(fd)
            throw SystemError(call: "timerfd_settime", errno: code)
        }
        let handle = TimerHandle(fd: fd)
        self.handle = handle
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        changes = stream
        let thread = Thread { Self.run(fd: fd, handle: handle, continuation: continuation) }
        thread.name = "sk-clock"
        thread.start()
    }

    /// Stops watching and finishes ``changes``. Idempotent.
    public func stop() {
        handle.stopping.store(true, ordering: .sequentiallyConsistent)
        handle.fd.withLock { fd in
            guard let fd else { return }
            // The thread blocks in read(2) until the timer expires: make it expire now.
            _ = clinux_timerfd_fire_now(fd)
        }
    }

    deinit { stop() }

    private static func arm(_ fd: Int32) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return clinux_timerfd_arm_at(fd, Int64(now.tv_sec) + armAhead, 1) == 0
    }

    private static func run(fd: Int32, handle: TimerHandle, continuation: AsyncStream<Void>.Continuation) {
        defer {
            handle.fd.withLock { current in
                current = nil
                Glibc.close(fd)
            }
            continuation.finish()
        }
        var expirations: UInt64 = 0
        while !handle.stopping.load(ordering: .sequentiallyConsistent) {
            let count = read(fd, &expirations, MemoryLayout<UInt64>.size)
            if handle.stopping.load(ordering: .sequentiallyConsistent) { return }
            if count < 0 {
                switch errno {
                case EINTR: continue
                case ECANCELED: continuation.yield()
                default: return
                }
            }
            // Cancelled by a set, or expired because the clock was set past the far time: arm again from the
            // clock as it is now.
            guard arm(fd) else { return }
        }
    }
}
