import Foundation
import Platform
import TestSupport
import Testing

/// `ChildProcess.run` blocks its caller until the child ends, so every call here runs on a dedicated thread.
@Suite struct ChildProcessTests {
    @Test func capturesOutputAndExitStatusWithoutAShell() async throws {
        let output = try await onDedicatedThread { try ChildProcess.run(["sh", "-c", "printf out; printf err >&2; exit 7"], timeout: .seconds(10)) }
        #expect(output.status == .exited(7))
        #expect(output.standardOutput == Array("out".utf8))
        #expect(output.standardError == Array("err".utf8))
        let literal = try await onDedicatedThread { try ChildProcess.run(["echo", "$HOME", "*", ";"], timeout: .seconds(10)) }
        #expect(String(decoding: literal.standardOutput, as: UTF8.self) == "$HOME * ;\n")
    }

    @Test func passesTheGivenEnvironmentOnly() async throws {
        let output = try await onDedicatedThread { try ChildProcess.run(["/usr/bin/env"], environment: ["ONLY": "this"], timeout: .seconds(10)) }
        #expect(String(decoding: output.standardOutput, as: UTF8.self) == "ONLY=this\n")
    }

    @Test func reportsASignalledChild() async throws {
        let output = try await onDedicatedThread { try ChildProcess.run(["sh", "-c", "kill -TERM $$"], timeout: .seconds(10)) }
        #expect(output.status == .signaled(SIGTERM))
    }

    @Test func aTimeoutKillsTheWholeProcessGroup() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let pidFile = folder.path + "/grandchild.pid"
        // Timed on the thread that makes the call, as the call itself takes it.
        let (outcome, elapsed) = await onDedicatedThread {
            let started = ContinuousClock.now
            let outcome = Result { () throws(ChildProcessError) -> ProcessOutput in
                try ChildProcess.run(["sh", "-c", "sleep 30 & echo $! > \(pidFile); echo waiting >&2; sleep 30"], timeout: .milliseconds(500))
            }
            return (outcome, ContinuousClock.now - started)
        }
        let error = #expect(throws: ChildProcessError.self) { try outcome.get() }
        #expect(elapsed < .seconds(10))
        guard case let .timedOut(_, _, standardError)? = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(String(decoding: standardError, as: UTF8.self) == "waiting\n")
        let grandchild = try #require(Int32(String(decoding: readFile(pidFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Dead means gone or a zombie waiting for its new parent to reap it.
        let dead = await onDedicatedThread {
            var dead = false
            for _ in 0..<100 where !dead {
                let stat = String(decoding: readFile("/proc/\(grandchild)/stat"), as: UTF8.self)
                dead = stat.isEmpty || stat.contains(") Z ")
                if !dead { usleep(20_000) }
            }
            return dead
        }
        #expect(dead, "the background sleep (pid \(grandchild)) survived the timeout")
    }

    @Test func refusesOutputBeyondTheLimitAndMissingPrograms() async throws {
        await #expect(throws: ChildProcessError.self) {
            try await onDedicatedThread { try ChildProcess.run(["head", "-c", "100000", "/dev/zero"], timeout: .seconds(10), outputLimit: 1000) }
        }
        let missing = await #expect(throws: ChildProcessError.self) {
            try await onDedicatedThread { try ChildProcess.run(["no-such-program-here"], timeout: .seconds(10)) }
        }
        #expect(missing?.description.contains("cannot run no-such-program-here") == true)
        await #expect(throws: ChildProcessError.self) { try await onDedicatedThread { try ChildProcess.run([], timeout: .seconds(1)) } }
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
