import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

/// Several real processes using one vault at once: the CLI beside a process that keeps writing (the
/// crash test's writer), beside each other, and beside the daemon's state folder lock.
@Suite struct SharedVaultCLITests {
    func writeConfig(_ folder: TemporaryFolder, key: String = "{file: master.key}") throws -> String {
        try folder.write("state_dir: state\nvault:\n  key: \(key)\n", to: "config.yaml")
    }

    @Test func secretCommandsWorkWhileAnotherProcessWritesAndRotates() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder)
        let binary = try crashWriterBinary()
        let writer = try await CrashWriter.start(
            binary: binary, state: folder.state, keyFile: folder.keyFile, items: 3, firstRound: 1, rotate: true)
        try await writer.waitUntilReady()
        var results: [CommandResult] = []
        for index in 0..<4 {
            results.append(try await runCLI(["secret", "set", "shared/\(index)", "--config", config], input: "value \(index)", in: folder.path))
        }
        let listed = try await runCLI(["secret", "list", "--config", config], in: folder.path)
        let removed = try await runCLI(["secret", "rm", "shared/3", "--config", config], in: folder.path)
        let acknowledged = await writer.kill()

        for result in results { #expect(result.status == 0, "\(result.standardError)") }
        #expect(listed.status == 0, "\(listed.standardError)")
        #expect(listed.standardOutput == "shared/0\nshared/1\nshared/2\nshared/3\n")
        #expect(removed.status == 0, "\(removed.standardError)")
        let vault = try openWithKeyFile(folder, create: false)
        try vault.rotate()
        #expect(try vault.names(of: .credential).names == ["shared/0", "shared/1", "shared/2"])
        for index in 0..<3 {
            #expect(try vault.value(of: ItemReference(.credential, "shared/\(index)")) == bytes("value \(index)"))
        }
        // The writer's items hold what it acknowledged last or the write it was killed in.
        for (item, round) in acknowledged {
            let value = try vault.value(of: ItemReference(.siteState, "item-\(item)"))
            #expect(value == CrashTestValue.bytes(item: item, round: round) || value == CrashTestValue.bytes(item: item, round: round + 1))
        }
        #expect(try vault.list().problems.isEmpty)
    }

    /// Six first runs at once on a folder without a vault: one creates the key file and the keyring,
    /// the others use them, and no secret is lost.
    @Test func concurrentSecretSetsFromSeveralProcessesLoseNone() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder)
        let names = (0..<6).map { "parallel/\($0)" }
        let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for name in names {
                group.addTask { try await runCLI(["secret", "set", name, "--config", config], input: "value of \(name)", in: folder.path) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for result in results { #expect(result.status == 0, "\(result.standardError)") }
        let listed = try await runCLI(["secret", "list", "--config", config], in: folder.path)
        #expect(listed.standardOutput == names.joined(separator: "\n") + "\n")
        let vault = try openWithKeyFile(folder, create: false)
        for name in names { #expect(try vault.value(of: ItemReference(.credential, name)) == bytes("value of \(name)")) }
    }

    @Test func rekeyWhileOtherProcessesReadAndWrite() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder)
        #expect(try await runCLI(["secret", "set", "kept", "--config", config], input: "kept value", in: folder.path).status == 0)
        let binary = try crashWriterBinary()
        let writer = try await CrashWriter.start(
            binary: binary, state: folder.state, keyFile: folder.keyFile, items: 2, firstRound: 1, rotate: false)
        try await writer.waitUntilReady()
        // This process reads throughout the rekey.
        let reader = try openWithKeyFile(folder, create: false)
        let readsDone = SharedCounter()
        let reads = Task {
            await onDedicatedThread { () -> [String] in
                var failures: [String] = []
                var count = 0
                while readsDone.value == 0 || count < 20 {
                    do {
                        if try reader.value(of: ItemReference(.credential, "kept")) != bytes("kept value") { failures.append("wrong value") }
                    } catch {
                        failures.append("\(error)")
                    }
                    count += 1
                }
                return failures
            }
        }
        let rekey = try await runCLI(
            ["vault", "rekey", "--new-passphrase-env", "NEW_VAULT_PASS", "--config", config], environment: ["NEW_VAULT_PASS": "shared rekey"],
            in: folder.path)
        readsDone.add()
        let failures = await reads.value
        // The writer goes on after the rekey: two more rounds of its items written before it is killed.
        try await writer.waitForWrites(4, after: writer.acknowledgedWrites)
        let acknowledged = await writer.kill()

        #expect(rekey.status == 0, "\(rekey.standardError)")
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        _ = try writeConfig(folder, key: "{passphrase_env: NEW_VAULT_PASS}")
        let listed = try await runCLI(["secret", "list", "--config", config], environment: ["NEW_VAULT_PASS": "shared rekey"], in: folder.path)
        #expect(listed.standardOutput == "kept\n")
        let vault = try Vault.open(stateDirectory: folder.state, key: .passphraseEnvironment(name: "P"), environment: ["P": "shared rekey"])
        #expect(acknowledged.count == 2)
        for (item, round) in acknowledged {
            let value = try vault.value(of: ItemReference(.siteState, "item-\(item)"))
            #expect(value == CrashTestValue.bytes(item: item, round: round) || value == CrashTestValue.bytes(item: item, round: round + 1))
        }
        // The reader keeps its master key: it still writes items everyone can read.
        try reader.set(bytes("after"), for: ItemReference(.credential, "after"))
        #expect(try vault.value(of: ItemReference(.credential, "after")) == bytes("after"))
    }

    /// `login` keeps its vault open while its flow waits for a slow site; `secret` commands run beside it.
    @Test
    func secretCommandsSucceedWhileASlowLoginHasTheVaultOpen() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder)
        let arrived = folder.path + "/arrived"
        let release = folder.path + "/release"
        let server = try await SpawnedProgram.start("/usr/bin/python3", ["-c", Self.slowSiteScript, arrived, release])
        let runs: (waited: Bool, set: CommandResult, listed: CommandResult, login: CommandResult)
        do {
            runs = try await slowLogin(folder: folder, config: config, port: server.firstLine, arrived: arrived)
        } catch {
            await server.kill()
            throw error
        }
        await server.kill()

        #expect(runs.waited, "the slow site never saw the login's request")
        #expect(runs.set.status == 0, "\(runs.set.standardError)")
        #expect(runs.listed.status == 0, "\(runs.listed.standardError)")
        #expect(runs.listed.standardOutput == "before\nduring/login\n")
        #expect(runs.login.status == 0, "\(runs.login.standardError)")
        let vault = try openWithKeyFile(folder, create: false)
        #expect(try vault.names(of: .siteState).names == ["slow"])
        #expect(try vault.value(of: ItemReference(.credential, "during/login")) == bytes("v1"))
    }

    /// Starts `login slow`, waits until the site has its request, runs `secret set` and `secret list`,
    /// then lets the site answer.
    private func slowLogin(
        folder: TemporaryFolder, config: String, port: String, arrived: String
    ) async throws -> (waited: Bool, set: CommandResult, listed: CommandResult, login: CommandResult) {
        try FileManager.default.createDirectory(atPath: folder.path + "/sites", withIntermediateDirectories: true)
        _ = try folder.write("""
            base_url: http://127.0.0.1:\(port)
            login:
              steps:
                - name: slow answer
                  get: /login
                  expect: {status: 200, cookie: sid}
            cookies:
              essential: [sid]

            """, to: "sites/slow.yaml")
        let before = try await runCLI(["secret", "set", "before", "--config", config], input: "v0", in: folder.path)
        try #require(before.status == 0, "\(before.standardError)")

        async let login = runCLI(["login", "slow", "--config", config], in: folder.path)
        // Once the site has the login's request, the login has opened the vault and waits.
        let waited = await onDedicatedThread { () -> Bool in
            var polls = 0
            while !FileManager.default.fileExists(atPath: arrived), polls < 2000 {
                usleep(10_000)
                polls += 1
            }
            return FileManager.default.fileExists(atPath: arrived)
        }
        let set = try await runCLI(["secret", "set", "during/login", "--config", config], input: "v1", in: folder.path)
        let listed = try await runCLI(["secret", "list", "--config", config], in: folder.path)
        _ = try folder.write("", to: "release")
        return (waited, set, listed, try await login)
    }

    /// A site on 127.0.0.1 that prints its port, then answers each request only once the file
    /// `argv[2]` exists, after creating `argv[1]`; the answer sets the cookie `sid`.
    static let slowSiteScript = """
        import http.server, os, sys, time
        os.closerange(3, 65536)
        arrived, release = sys.argv[1], sys.argv[2]
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                open(arrived, "w").close()
                for _ in range(3000):
                    if os.path.exists(release):
                        break
                    time.sleep(0.01)
                body = b"ok"
                self.send_response(200)
                self.send_header("Set-Cookie", "sid=slow-session; Path=/; Max-Age=3600")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    /// The daemon's lock against a second real process (a Python script taking the same flock), and the
    /// CLI working while it is held.
    @Test
    func theStateFolderLockNamesItsHolderAndTheCLINeverTakesIt() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder)
        let lockPath = folder.state + "/lock"

        let lock = try StateFolderLock.acquire(stateDirectory: folder.state)
        #expect(lock.path == lockPath)
        #expect(String(decoding: readFile(lockPath), as: UTF8.self) == "\(getpid())\n")
        #expect(mode(of: lockPath) == 0o600)
        let probe = try await runProgram("/usr/bin/env", ["python3", "-c", Self.lockScript, lockPath, "try"])
        #expect(probe.outputText == "busy\n", "\(probe.errorText)")
        let again = #expect(throws: VaultError.self) { try StateFolderLock.acquire(stateDirectory: folder.state) }
        #expect(again?.description == "\(lockPath) is locked by another process (pid \(getpid())); only one sessionkeeper daemon may use a state folder at a time")
        // `secret` and `vault` work beside the daemon.
        #expect(try await runCLI(["secret", "set", "beside/daemon", "--config", config], input: "v", in: folder.path).status == 0)
        #expect(try await runCLI(["secret", "list", "--config", config], in: folder.path).standardOutput == "beside/daemon\n")
        #expect(try await runCLI(["vault", "rotate", "--config", config], in: folder.path).status == 0)
        lock.release()
        #expect(try await runProgram("/usr/bin/env", ["python3", "-c", Self.lockScript, lockPath, "try"]).outputText == "got\n")

        // Another process holds it: the error names that process; its death frees the lock.
        let holder = try await SpawnedProgram.start("/usr/bin/python3", ["-c", Self.lockScript, lockPath, "hold"])
        let refused = #expect(throws: VaultError.self) { try StateFolderLock.acquire(stateDirectory: folder.state) }
        #expect(refused?.description.contains("locked by another process (pid \(holder.pid))") == true)
        if case let .locked(.held(_, pid))? = refused?.reason { #expect(pid == holder.pid) } else { Issue.record("not .locked: \(String(describing: refused))") }
        await holder.kill()
        let taken = try StateFolderLock.acquire(stateDirectory: folder.state)
        taken.release()
    }

    /// `try`: one non-blocking flock, printing `got` or `busy`. `hold`: takes the lock, writes its pid,
    /// prints `held` and sleeps until killed.
    static let lockScript = """
        import fcntl, os, sys, time
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
        if sys.argv[2] == "try":
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                print("got")
            except BlockingIOError:
                print("busy")
        else:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.write(fd, ("%d\\n" % os.getpid()).encode())
            print("held", flush=True)
            while True:
                time.sleep(60)
        """
}
