import Foundation
import TestSupport
import Testing

@testable import Platform

/// A child's exit is seen when it happens, whatever else the process's threads are doing: the run's own work
/// happens on the watcher thread (``ChildProcessExecutor``), and a deadline that passes after the exit is not a
/// timeout. The load runs in `child-exit-probe` (Tests/ChildExitProbe), a process of its own, so that blocking or
/// saturating its cooperative pool cannot slow the other tests.
@Suite struct ChildExitTests {
    static let environment = ChildEnvironment.minimal(from: ProcessInfo.processInfo.environment)

    private func probe(_ arguments: [String]) async throws -> String {
        let program = try #require(
            builtProgram("child-exit-probe"),
            "no child-exit-probe executable beside the tests; build it first (swift build --build-tests builds it)")
        let result = try await runProgram(program, arguments)
        #expect(result.status == 0, "child-exit-probe failed: \(result.errorText)")
        return result.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The regression behind the suite's rare "did not finish within 20 seconds": with every thread of the
    /// cooperative pool blocked past the program's timeout, a program that exited long before it is reported as
    /// exited with its own status, not as timed out.
    @Test func anExitBeforeTheDeadlineIsNoTimeoutHoweverLateThePoolFreesUp() async throws {
        #expect(try await probe(["blocked-pool"]) == "exit status 3")
    }

    /// A timed-out program that ignores SIGTERM gets SIGKILL at the end of its grace while every thread of the
    /// cooperative pool is blocked (for 6 s): the stopping is the watcher thread's, not swift-subprocess's teardown,
    /// which waits for the pool. The run itself returns once the pool frees up, as stopped at its timeout.
    @Test func aTimedOutProgramIsKilledOnTimeHoweverBusyThePool() async throws {
        let report = try await probe(["blocked-pool-timeout"])
        let parts = report.split(separator: ";", maxSplits: 1)
        let gone = try #require(parts.first.flatMap { Double($0.split(separator: " ")[2]) }, "\(report)")
        #expect(gone > 0 && gone < 5, "\(report)")
        #expect(parts.last?.trimmingCharacters(in: .whitespaces) == "stopped at its timeout", "\(report)")
    }

    /// Many short children with the probe's cores saturated (CPU-bound tasks on the cooperative pool, blocking work
    /// on NIO's thread pool): every one is seen to exit with its status and output. The latencies are printed for
    /// the log; their goal is Benchmarks/run-child-exit's, not a timed test's.
    @Test func everyChildOfAStressRunIsSeenToExit() async throws {
        let report = try await probe(["stress", "--children", "400", "--parallel", "8", "--cpu-tasks", "4", "--pool-threads", "2"])
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any], "not JSON: \(report)")
        #expect(fields["children"] as? Int == 400)
        #expect(fields["failed"] as? Int == 0, "failures: \(fields["failures"] ?? "")")
        print("child-exit-probe stress: \(report)")
    }

    /// The caller goes on where it was, not on the watcher thread (which must stay free for other children's exits);
    /// a standard error callback runs on the watcher thread, which is why it must return quickly.
    @Test func theCallerResumesOffTheWatcherThreadAndCallbacksRunOnIt() async throws {
        let callbackThreads = Lines()
        let result = try await ChildProcess(
            executable: "sh", arguments: ["-c", "echo line >&2"], environment: Self.environment, timeout: .seconds(20),
            outputLimit: 1024, outputOverflow: .truncate
        ).run { _ in callbackThreads.add(currentThreadName()) }
        #expect(result.termination == .exited(0))
        #expect(callbackThreads.all == ["sk-children"])
        // A suspension point after the run: the task runs on its own executor again.
        await Task.yield()
        #expect(currentThreadName() != "sk-children")
    }
}

/// The calling thread's name, from /proc (what `top -H` and gdb show).
private func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .whitespacesAndNewlines)
}
