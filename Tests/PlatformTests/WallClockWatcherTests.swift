#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Platform
import Testing

/// ``WallClockWatcher``: the kernel's report that the wall clock was set, with no timer firing in between.
@Suite struct WallClockWatcherTests {
    /// Sets the wall clock to the time it reads, which moves it by the microseconds between the two calls:
    /// enough for the kernel to report a set to every watcher, harmless to everything else on the machine.
    /// False without the right to set the clock (CAP_SYS_TIME).
    static func setTheClockToItself() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return clock_settime(CLOCK_REALTIME, &now) == 0
    }

    /// The next element of `changes`, or nil when none comes within `limit` (or the stream finished).
    static func next(_ watcher: WallClockWatcher, within limit: Duration) async -> Bool? {
        await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                var iterator = watcher.changes.makeAsyncIterator()
                return await iterator.next() != nil
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Setting the clock, even to itself, is felt by every process on the machine and every test of the parallel
    /// suite, so this test runs only when asked (`SESSIONKEEPER_TEST_SETS_CLOCK=1`, with CAP_SYS_TIME). The same
    /// report is checked end to end on every CI run by `Reliability/faults`' clock jump, against the daemon.
    static let mayRun = ProcessInfo.processInfo.environment["SESSIONKEEPER_TEST_SETS_CLOCK"] == "1"

    @Test(.enabled(if: mayRun && setTheClockToItself(), "sets the system clock: SESSIONKEEPER_TEST_SETS_CLOCK=1 and CAP_SYS_TIME"))
    func aSetOfTheClockIsReported() async throws {
        let watcher = try WallClockWatcher()
        defer { watcher.stop() }
        // The thread arms its timer before the first set can be missed: the timer is armed in init.
        #expect(Self.setTheClockToItself())
        #expect(await Self.next(watcher, within: .seconds(10)) == true)
        // And again: the watcher re-arms after each report.
        #expect(Self.setTheClockToItself())
        #expect(await Self.next(watcher, within: .seconds(10)) == true)
    }

    @Test func stopEndsTheStreamPromptly() async throws {
        let watcher = try WallClockWatcher()
        watcher.stop()
        // The thread blocked in read(2) is woken by the timer made to fire now, closes it, and finishes the stream
        // (after a report, if another process set the clock meanwhile).
        var finished = false
        for _ in 0..<3 where !finished {
            finished = await Self.next(watcher, within: .seconds(10)) == false
        }
        #expect(finished)
        watcher.stop()
    }
}
