import Foundation
import TestSupport
import Testing

/// `sessionkeeper run` as a user runs it: the daemon logs the demo site in, a second daemon on the same
/// state folder is refused naming the first one's pid, and SIGTERM stops it cleanly.
@Suite struct RunCLITests {
    @Test func theDaemonLogsInRefusesASecondOneAndStopsOnSIGTERM() async throws {
        try await LoginCLIWorld.with { world in
            let binary = try #require(CLIRunner.executable)
            let logPath = world.folder.path("daemon.log")
            FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try #require(FileHandle(forWritingAtPath: logPath))
            let daemon = Process()
            daemon.executableURL = binary
            daemon.arguments = ["run", "--config", world.configPath]
            daemon.environment = ["PATH": "/usr/bin:/bin", "HOME": world.folder.path, "DEMO_PASSWORD": LoginCLITests.password]
            daemon.currentDirectoryURL = world.folder.url
            // A file, not a pipe: the daemon outlives other tests' children, and must not hold their pipes' ends.
            daemon.standardOutput = log
            daemon.standardError = log
            daemon.standardInput = FileHandle.nullDevice
            try launch(daemon)
            defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

            let loggedIn = await onDedicatedThread { () -> Bool in
                for _ in 0..<200 {
                    if (try? String(contentsOfFile: logPath, encoding: .utf8))?.contains("outcome=ok run=login site=demo") == true { return true }
                    usleep(50_000)
                }
                return false
            }
            #expect(loggedIn, "daemon log: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
            let items = try world.vaultFiles()
            #expect(!items.isEmpty, "vault items: \(items.count)")

            let second = try await world.run(["run", "--config", world.configPath], environment: ["DEMO_PASSWORD": LoginCLITests.password])
            #expect(second.status != 0)
            #expect(second.stderr.contains("pid \(daemon.processIdentifier)"), "\(second.stderr)")

            kill(daemon.processIdentifier, SIGTERM)
            let status = await onDedicatedThread { () -> Int32? in
                for _ in 0..<200 where daemon.isRunning { usleep(50_000) }
                return daemon.isRunning ? nil : daemon.terminationStatus
            }
            #expect(status == 0)
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            #expect(text.contains("daemon stopped"))
            #expect(!text.contains(LoginCLITests.password))
        }
    }
}
