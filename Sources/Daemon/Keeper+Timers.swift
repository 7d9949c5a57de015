import Foundation
import Logging
import Scheduler

// MARK: Timers: one sleeping task for the earliest deadline, and the wall clock's jumps

extension Keeper {
    /// Keeps exactly one sleeping task, for the earliest deadline of any site or of the gate.
    func rearm() {
        guard !stopped else { return }
        let next = [deadlineBySite.values.min(), gate.nextAdmission()].compactMap { $0 }.min()
        guard let next else {
            sleeper?.cancel()
            sleeper = nil
            sleeperDeadline = nil
            return
        }
        if sleeperDeadline == next, sleeper != nil { return }
        sleeper?.cancel()
        sleeperDeadline = next
        // Unstructured: the one timer outlives this step; it is kept in `sleeper` and cancelled when re-armed.
        sleeper = Task { [clock] in
            do {
                try await clock.sleep(until: next, tolerance: nil)
            } catch {
                return
            }
            // The task runs on the keeper (it was made there), so this is a plain call.
            self.tick()
        }
    }

    func tick() {
        sleeper = nil
        sleeperDeadline = nil
        let now = now
        noticeClockJump(now)
        let due = deadlineBySite.filter { $0.value <= now.monotonic }.keys
        for name in due {
            for (timer, deadline) in entries[name]?.schedule.deadlines ?? [:] where deadline <= now.monotonic {
                dispatch(.timerFired(timer), to: name)
            }
        }
        admitLogins()
        rearm()
    }

    /// The system reported that the wall clock was set (``Platform/WallClockWatcher``): compare the clocks now
    /// rather than at the next timer. A set that moved the clock less than ``clockJumpTolerance`` (an NTP step
    /// of milliseconds) changes nothing.
    public func wallClockWasSet() {
        guard !stopped else { return }
        noticeClockJump(now)
        admitLogins()
        rearm()
    }

    /// Expiry is wall time and timers are monotonic, so a wall clock that was set (or a suspend) leaves every
    /// plan on the old clock: a session the new wall time says is over would be refreshed only when its old
    /// timer fires. Each wake, and each report from the kernel that the clock was set, compares both clocks;
    /// a difference past the tolerance is logged and every site's schedule plans again
    /// (``SiteSchedule/Event/clockJumped``).
    func noticeClockJump(_ now: Now) {
        defer { clockReference = now }
        guard let reference = clockReference else { return }
        let wallMoved = now.wall.timeIntervalSince(reference.wall)
        let monotonicMoved = Double(reference.monotonic.duration(to: now.monotonic).wholeMilliseconds) / 1000
        let jump = wallMoved - monotonicMoved
        guard abs(jump) >= Double(Self.clockJumpTolerance.wholeMilliseconds) / 1000 else { return }
        logger.warning("the wall clock jumped (it was set, or the machine slept); planning every site again", metadata: [
            "jump_s": "\(Int(jump.rounded()))", "sites": "\(entries.count)",
        ])
        for name in entries.keys { dispatch(.clockJumped, to: name) }
    }
}

extension Keeper {
    /// No run in flight (but logins waiting for a person's answer), no lease's stored session being read, and no
    /// deadline passed without its wake: where a test that moves the keeper's clock waits before it looks or moves
    /// the clock again.
    var isSettled: Bool {
        entries.allSatisfy { name, entry in
            entry.runs.isEmpty || (waitingPrompts[name] != nil && entry.runs.count == 1 && entry.runs[.logIn] != nil)
        } && (sleeperDeadline.map { $0 > clock.now } ?? true) && pendingLeaseReads.isEmpty && learningWrites.isEmpty
    }
}
