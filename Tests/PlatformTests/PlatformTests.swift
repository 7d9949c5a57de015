import Foundation
import Locking
import Synchronization
import TestSupport
import Testing

@testable import Platform

/// Standard error lines of a run, collected from its `@Sendable` callback.
final class Lines: Sendable {
    private let lines = Locked<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Real child processes: `sh`, coreutils, and scripts given to `sh -c`.
@Suite struct ChildProcessTests {
    static let environment = ChildEnvironment.minimal(from: ProcessInfo.processInfo.environment)

    static func process(
        _ argv: [String], environment: ChildEnvironment = ChildProcessTests.environment, input: [UInt8] = [],
        timeout: Duration = .seconds(20), grace: Duration = ChildProcess.defaultTerminationGrace,
        limit: Int = 1 << 20, overflow: ChildProcess.OutputOverflow = .truncate
    ) -> ChildProcess {
        ChildProcess(
            executable: argv.first ?? "", arguments: Array(argv.dropFirst()), environment: environment, input: input,
            timeout: timeout, terminationGrace: grace, outputLimit: limit, outputOverflow: overflow)
    }

    /// A script that ignores SIGTERM, starts a background sleep that inherits that, writes its pid (its
    /// process group's id) to the file named by $1, says so on stderr and waits.
    static let stubbornScript = "trap '' TERM; sleep 1000 & echo $$ > \"$1\"; echo started >&2; sleep 1000"

    @Test func capturesOutputStatusAndStderrLinesWithoutAShell() async throws {
        let lines = Lines()
        let result = try await Self.process(["sh", "-c", "printf out; printf 'err one\\r\\nerr two' >&2; exit 7"]).run(standardErrorLine: lines.add)
        #expect(result.termination == .exited(7))
        #expect(result.standardOutput == Array("out".utf8))
        #expect(!result.outputTruncated)
        #expect(lines.all == ["err one", "err two"])
        let literal = try await Self.process(["echo", "$HOME", "*", ";"]).run()
        #expect(String(decoding: literal.standardOutput, as: UTF8.self) == "$HOME * ;\n")
        let echoed = try await Self.process(["cat"], input: Array("to stdin".utf8)).run()
        #expect(echoed.standardOutput == Array("to stdin".utf8))
    }

    @Test func passesTheGivenEnvironmentOnly() async throws {
        let exact = try await Self.process(["/usr/bin/env"], environment: ChildEnvironment(exactly: ["ONLY": "this"])).run()
        #expect(String(decoding: exact.standardOutput, as: UTF8.self) == "ONLY=this\n")

        let caller = ["PATH": "/usr/bin:/bin", "HOME": "/home/x", "LANG": "C.UTF-8", "SECRET_PASSPHRASE": "p", "LISTED": "yes", "OTHER": "no"]
        let minimal = ChildEnvironment.minimal(from: caller, passing: ["LISTED", "ABSENT"])
        #expect(minimal.variables == ["PATH": "/usr/bin:/bin", "HOME": "/home/x", "LANG": "C.UTF-8", "LISTED": "yes"])
        let seen = try await Self.process(["/usr/bin/env"], environment: minimal).run()
        let names = String(decoding: seen.standardOutput, as: UTF8.self).split(separator: "\n").map { $0.prefix { $0 != "=" } }
        #expect(names.sorted() == ["HOME", "LANG", "LISTED", "PATH"])
        #expect(ChildEnvironment.minimal(from: [:]).variables == ["PATH": ChildEnvironment.fallbackPATH])
    }

    @Test func reportsASignalledChildAndItsOwnProcessGroup() async throws {
        let signalled = try await Self.process(["sh", "-c", "kill -TERM $$"]).run()
        #expect(signalled.termination == .signaled(SIGTERM))
        // Field 5 of /proc/self/stat is the process group: the child leads its own, not the test's.
        let stat = try await Self.process(["sh", "-c", "echo $$; cat /proc/$$/stat"]).run()
        let lines = String(decoding: stat.standardOutput, as: UTF8.self).split(separator: "\n")
        let pid = try #require(lines.first.flatMap { Int32($0) })
        let fields = try #require(lines.last?.split(separator: ")").last?.split(separator: " "))
        #expect(fields.count > 2 && Int32(fields[2]) == pid)
        #expect(pid != getpgrp())
    }

    @Test func noDescriptorOfTheParentReachesTheChild() async throws {
        // Opened the careless way (no O_CLOEXEC), as a library might: the child must still not see them.
        let leakedFile = open("/dev/null", O_RDONLY)
        var leakedPipe: [Int32] = [-1, -1]
        #expect(pipe(&leakedPipe) == 0)
        defer {
            close(leakedFile)
            leakedPipe.forEach { _ = close($0) }
        }
        #expect(leakedFile > 2)
        let listed = try await Self.process(["sh", "-c", "ls /proc/$$/fd"], input: Array("x".utf8)).run()
        #expect(String(decoding: listed.standardOutput, as: UTF8.self) == "0\n1\n2\n")
    }

    @Test func aTimeoutStopsTheWholeGroupEvenWhatIgnoresSIGTERM() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let pidFile = folder.path + "/group.pid"
        let lines = Lines()
        // Long enough for the script to start and speak on a loaded machine.
        let process = Self.process(["sh", "-c", Self.stubbornScript, "sh", pidFile], timeout: .milliseconds(1500), grace: .milliseconds(500))
        // Timed in a high-priority task: the test's own task may wait behind other tests' work.
        let (result, elapsed) = try await Task.detached(priority: .high) {
            let started = ContinuousClock.now
            let result = try await process.run(standardErrorLine: lines.add)
            return (result, ContinuousClock.now - started)
        }.value
        #expect(result.termination == .timedOut)
        #expect(lines.all == ["started"])
        // SIGTERM changed nothing, so SIGKILL came after the grace period. How soon after is checked where no other
        // test shares the process (ChildExitTests.aTimedOutProgramIsKilledOnTimeHoweverBusyThePool, in
        // child-exit-probe): here the caller's own resumption waits behind every job this test process has queued on
        // the cooperative pool, which at the suite's start (all tests beginning at once) took 23.5 s in 1 of 10 runs.
        #expect(elapsed >= .milliseconds(1950))
        let group = try #require(await pid(in: pidFile))
        #expect(await groupIsGone(group))
    }

    @Test func cancellingTheCallerStopsTheWholeGroup() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let pidFile = folder.path + "/group.pid"
        let (started, announce) = AsyncStream.makeStream(of: String.self)
        let process = Self.process(["sh", "-c", Self.stubbornScript, "sh", pidFile], timeout: .seconds(60), grace: .milliseconds(500))
        let run = Task.detached(priority: .high) {
            let result = try await process.run(standardErrorLine: { announce.yield($0) })
            return (result, ContinuousClock.now)
        }
        // Standard error arrives while the program runs: the line is the signal to cancel.
        for await line in started where line == "started" { break }
        let cancelled = ContinuousClock.now
        run.cancel()
        let (result, finished) = try await run.value
        #expect(result.termination == .cancelled)
        #expect(finished - cancelled >= .milliseconds(450))
        #expect(finished - cancelled < .seconds(5))
        let group = try #require(await pid(in: pidFile))
        #expect(await groupIsGone(group))
    }

    @Test func aTaskCancelledBeforeTheRunGetsACancelledRun() async throws {
        let process = Self.process(["sleep", "30"])
        let run = Task.detached(priority: .high) {
            withUnsafeCurrentTask { $0?.cancel() }
            let started = ContinuousClock.now
            let result = try await process.run()
            return (result.termination, ContinuousClock.now - started)
        }
        let (termination, elapsed) = try await run.value
        #expect(termination == .cancelled)
        #expect(elapsed < .seconds(10))
    }

    @Test func whatTheProgramLeftInItsGroupGoesWhenItExits() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let pidFile = folder.path + "/group.pid"
        // The first background sleep holds standard output open; the run still ends when the shell does.
        let process = Self.process([
            "sh", "-c", "sleep 1000 & sleep 1000 >/dev/null 2>&1 & echo $$ > \"$1\"; echo done", "sh", pidFile,
        ])
        // Timed in a high-priority task, as above.
        let (result, elapsed) = try await Task.detached(priority: .high) {
            let started = ContinuousClock.now
            let result = try await process.run()
            return (result, ContinuousClock.now - started)
        }.value
        #expect(result.termination == .exited(0))
        #expect(result.standardOutput == Array("done\n".utf8))
        #expect(elapsed < .seconds(10))
        let group = try #require(await pid(in: pidFile))
        #expect(await groupIsGone(group))
    }

    @Test func outputBeyondTheLimitIsTruncatedOrStopsTheProgram() async throws {
        let truncated = try await Self.process(["head", "-c", "100000", "/dev/zero"], limit: 1000).run()
        #expect(truncated.termination == .exited(0))
        #expect(truncated.standardOutput.count == 1000)
        #expect(truncated.outputTruncated)
        // Stopped at the limit, not at the 60 s timeout (timed in a high-priority task, as above).
        let endless = Self.process(["yes"], timeout: .seconds(60), limit: 1000, overflow: .terminate)
        let (outcome, elapsed) = await Task.detached(priority: .high) {
            let started = ContinuousClock.now
            let outcome: Result<ChildProcessResult, ChildProcessError>
            do throws(ChildProcessError) { outcome = .success(try await endless.run()) } catch { outcome = .failure(error) }
            return (outcome, ContinuousClock.now - started)
        }.value
        #expect(throws: ChildProcessError.outputTooLarge(program: "yes", limit: 1000)) { try outcome.get() }
        #expect(elapsed < .seconds(30))
    }

    @Test func longStderrLinesArriveInPieces() async throws {
        let lines = Lines()
        _ = try await Self.process(["sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x >&2; echo >&2; echo tail >&2"]).run(standardErrorLine: lines.add)
        let maximum = ChildProcess.maximumLineLength
        #expect(lines.all.map(\.count) == [maximum, maximum, 10000 - 2 * maximum, 4])
        #expect(lines.all.last == "tail")
    }

    @Test func programsThatCannotStartAreLaunchErrors() async throws {
        let missing = await #expect(throws: ChildProcessError.self) { try await Self.process(["no-such-program-here"]).run() }
        #expect(missing?.description.contains("cannot run no-such-program-here") == true)
        let absent = await #expect(throws: ChildProcessError.self) { try await Self.process(["/nonexistent/program"]).run() }
        #expect(absent?.description.hasPrefix("cannot run /nonexistent/program: ") == true)
        await #expect(throws: ChildProcessError.self) { try await Self.process([]).run() }
    }

    @Test func aSynchronousCallerGetsTheSameRun() async throws {
        let process = Self.process(["sh", "-c", "echo blocking; exit 3"])
        let result = try await onDedicatedThread { () throws(ChildProcessError) in try process.runBlocking() }
        #expect(result.termination == .exited(3))
        #expect(result.standardOutput == Array("blocking\n".utf8))
    }
}

@Suite struct LineSplitterTests {
    func split(_ chunks: [String], maximum: Int = 8) -> [String] {
        var splitter = LineSplitter(maximumLength: maximum)
        var lines: [String] = []
        for chunk in chunks {
            Array(chunk.utf8).withUnsafeBytes { splitter.append($0) { lines.append($0) } }
        }
        splitter.finish { lines.append($0) }
        return lines
    }

    @Test func linesAcrossChunksCRLFAndALastLineWithoutEnd() {
        #expect(split(["a", "b\nc\r", "\n\nd"]) == ["ab", "c", "", "d"])
    }

    @Test func longLinesComeInPiecesWithoutAnEmptyLineAfterAnExactCut() {
        #expect(split(["0123456789ab\n"]) == ["01234567", "89ab"])
        #expect(split(["01234567\nx"]) == ["01234567", "x"])
    }
}

@Suite struct PrivateFileTests {
    @Test func ownerOnlyFilesAreReadAndOthersRefused() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let file = try folder.write("secret", to: "f", mode: 0o600)
        #expect(try PrivateFile.read(file) == Array("secret".utf8))
        chmod(file, 0o640)
        #expect(throws: PrivateFileError.accessibleByOthers(path: file, mode: 0o640)) { try PrivateFile.read(file) }
        #expect(try PrivateFile.read(file, allowingGroup: true) == Array("secret".utf8))
        chmod(file, 0o604)
        #expect(throws: PrivateFileError.accessibleByOthers(path: file, mode: 0o604)) { try PrivateFile.read(file, allowingGroup: true) }
        chmod(file, 0o600)
        #expect(throws: PrivateFileError.tooLarge(path: file, size: 6, limit: 5)) { try PrivateFile.read(file, limit: 5) }
        #expect(throws: PrivateFileError.notRegularFile(path: folder.path)) { try PrivateFile.read(folder.path) }
    }

    @Test func aFileOfAnotherUserIsRefused() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let file = try folder.write("secret", to: "f", mode: 0o600)
        if getuid() == 0 {
            #expect(chown(file, 4242, 4242) == 0)
            #expect(throws: PrivateFileError.foreignOwner(path: file, owner: 4242)) { try PrivateFile.read(file) }
        } else {
            // Only root can give a file away; an unprivileged run checks that the owner passes.
            #expect(try PrivateFile.read(file) == Array("secret".utf8))
        }
    }
}

@Suite struct DurableFileTests {
    @Test func writesWithExactModeWhateverTheUmaskAndReplacesAtomically() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.path + "/data"
        try DurableFile.write(Array("one".utf8), to: path, mode: 0o640)
        #expect(mode(of: path) == 0o640)
        try DurableFile.write(Array(repeating: 7, count: 200_000), to: path)
        #expect(mode(of: path) == 0o600)
        #expect(try DurableFile.read(path).count == 200_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["data"])
        let missing = #expect(throws: SystemError.self) { try DurableFile.read(folder.path + "/none") }
        #expect(missing?.errno == ENOENT)
    }
}
