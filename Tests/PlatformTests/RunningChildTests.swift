import Foundation
@testable import Platform
import TestSupport
import Testing

/// ``ChildProcess/start(standardError:)``: a real program kept running while the caller talks with it.
@Suite struct RunningChildTests {
    static func program(_ argv: [String], timeout: Duration = .seconds(60), directory: String? = nil) -> ChildProcess {
        ChildProcess(
            executable: argv[0], arguments: Array(argv.dropFirst()), environment: ChildProcessTests.environment,
            timeout: timeout, terminationGrace: .seconds(1), outputLimit: 1 << 20, outputOverflow: .truncate,
            workingDirectory: directory)
    }

    /// Input written while it runs comes back on its output; closing the input ends it with its own status.
    @Test func aConversationWhileItRunsThenItsOwnEnd() async throws {
        let child = try await Self.program(["sh", "-c", "read line; echo \"got $line\"; read rest; echo err >&2; exit 3"]).start()
        child.write(Array("hello\n".utf8))
        #expect(await child.waitForOutput(within: .seconds(20)) { String(decoding: $0, as: UTF8.self) == "got hello\n" })
        #expect(child.termination == nil)
        child.closeInput()
        #expect(await child.wait() == .exited(3))
        #expect(child.standardError == Array("err\n".utf8))
        #expect(!child.send(SIGTERM), "nothing is sent to a program that ended")
    }

    /// SIGTERM reaches the program, whose own exit status is reported; standard error merged and a working folder.
    @Test func stopSendsSIGTERMAndReportsHowItEnded() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let script = "trap 'echo bye >&2; exit 0' TERM; pwd; while :; do sleep 0.05; done"
        let child = try await Self.program(["sh", "-c", script], directory: folder.path).start(standardError: .mergedWithOutput)
        #expect(await child.waitForOutput(within: .seconds(20)) { $0.contains(0x0A) })
        #expect(await child.wait(within: .milliseconds(100)) == nil)
        #expect(await child.stop() == .exited(0))
        // The shell may also say that the group's SIGTERM ended its `sleep`.
        let output = String(decoding: child.standardOutput, as: UTF8.self)
        #expect(output.hasPrefix(URL(fileURLWithPath: folder.path).resolvingSymlinksInPath().path + "\n") && output.hasSuffix("bye\n"))
    }

    /// What ignores SIGTERM is killed after the grace period; `kill()` ends a program at once, as a crash would.
    @Test func whatIgnoresSIGTERMIsKilledAndKillIsImmediate() async throws {
        let stubborn = try await Self.program(["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"]).start()
        #expect(await stubborn.waitForOutput(within: .seconds(20)) { $0.contains(0x0A) })
        #expect(await stubborn.stop(grace: .milliseconds(300)) == .signaled(SIGKILL))
        let crashed = try await Self.program(["sleep", "1000"]).start()
        #expect(await crashed.kill() == .signaled(SIGKILL))
    }

    /// At its timeout the whole group is stopped; letting go of a running child kills what is left of its group.
    @Test func theTimeoutAndLettingGoStopTheWholeGroup() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let pidFile = folder.path + "/group.pid"
        let timed = try await Self.program(["sh", "-c", ChildProcessTests.stubbornScript, "sh", pidFile], timeout: .seconds(1)).start()
        let group = try #require(await pid(in: pidFile))
        #expect(await timed.wait() == .signaled(SIGKILL))
        #expect(await groupIsGone(group))

        let secondFile = folder.path + "/second.pid"
        var dropped: RunningChild? = try await Self.program(["sh", "-c", ChildProcessTests.stubbornScript, "sh", secondFile]).start()
        let second = try #require(await pid(in: secondFile))
        #expect(dropped?.termination == nil)
        dropped = nil
        #expect(await groupIsGone(second))
    }

    @Test func aProgramThatCannotStartIsALaunchError() async throws {
        await #expect(throws: ChildProcessError.self) { _ = try await Self.program(["/nonexistent/program"]).start() }
    }
}
