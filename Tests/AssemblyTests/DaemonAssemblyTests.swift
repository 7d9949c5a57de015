import Assembly
import DemoSite
import Foundation
import Logging
import SiteConfig
import SocketClient
import TestSupport
import Testing

/// The daemon as `sessionkeeper run` assembles it, started in the test's own process on a config in a temporary
/// folder: it logs the demo site in, serves the cookie over its socket, refuses a second daemon on the same state
/// folder, and stops on ``DaemonAssembly/stop()`` with its socket file removed.
@Suite struct DaemonAssemblyTests {
    /// A config folder with the demo site's file (its password from `DEMO_PASSWORD`, which the assembly's
    /// environment holds) and a socket of its own.
    struct World {
        let folder: TemporaryFolder
        let configPath: String
        let socketPath: String
        let loader = ConfigurationLoader(environment: [:])

        init(site baseURL: URL) throws {
            folder = try TemporaryFolder("assembly")
            socketPath = folder.path("state/api.sock")
            try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
            _ = try folder.write(demoSiteLoginYAML(baseURL: baseURL), to: "sites/demo.yaml", mode: 0o644)
            configPath = try folder.write(
                "state_dir: state\nsites_dir: sites\nvault: {key: {file: state/master.key}}\nsocket: {path: state/api.sock}\n",
                to: "config.yaml", mode: 0o644)
        }

        func daemon(log: CapturedLog) throws -> DaemonAssembly {
            DaemonAssembly(
                configPath: configPath, config: try loader.loadConfig(at: configPath), loader: loader,
                environment: ["DEMO_PASSWORD": DemoSite.Configuration.defaultPassword], keyEnvironment: [:],
                logger: log.logger(level: .info), signals: [])
        }

        /// `GET target` over the daemon's socket, on a thread of its own (the client blocks).
        func get(_ target: String) async throws -> UnixSocketHTTPResponse {
            let client = UnixSocketHTTPClient(socketPath: socketPath, timeout: .seconds(20))
            return try await onDedicatedThread { () throws(UnixSocketHTTPError) in try client.send("GET", target) }
        }
    }

    @Test func theAssembledDaemonServesTheDemoCookieOverItsSocketAndStops() async throws {
        let site = try await DemoSite.start(configuration: DemoSite.Configuration(port: 0))
        let world = try World(site: site.baseURL)
        defer { world.folder.cleanUp() }
        let log = CapturedLog()
        let daemon = try world.daemon(log: log)
        let running = Task { try await daemon.run() }

        var answer: UnixSocketHTTPResponse?
        let served = try await waitUntil(.seconds(30)) {
            answer = try? await world.get("/v1/sites/demo/cookies?wait=10s")
            return answer?.status == 200
        }
        #expect(served, "log: \(log.all)")
        let cookie = String(decoding: answer?.body ?? [], as: UTF8.self)
        #expect(cookie.contains("demo_session="))

        // A second daemon on the same state folder is refused before it touches anything.
        let second = try world.daemon(log: CapturedLog())
        do {
            try await second.run()
            Issue.record("a second daemon on the same state folder ran")
        } catch {
            guard case .vault = error else { throw error }
            #expect(error.description.contains("pid \(ProcessInfo.processInfo.processIdentifier)"), "\(error)")
        }

        await daemon.stop()
        try await running.value
        #expect(!FileManager.default.fileExists(atPath: world.socketPath), "the socket file is removed on shutdown")
        #expect(log.lines(containing: "outcome=ok").contains { $0.contains("run=login") }, "log: \(log.all)")
        #expect(!log.all.contains { $0.contains(DemoSite.Configuration.defaultPassword) })
        await site.stop()
    }

    /// A socket path that holds something other than a socket stops the daemon before it serves, with the path
    /// named; the state folder is free again afterwards.
    @Test func aSocketPathHoldingAFileStopsTheDaemonBeforeItServes() async throws {
        let world = try World(site: URL(string: "http://127.0.0.1:9")!)
        defer { world.folder.cleanUp() }
        try FileManager.default.createDirectory(atPath: world.folder.path("state"), withIntermediateDirectories: true)
        _ = try world.folder.write("not a socket", to: "state/api.sock")
        for _ in 0..<2 {
            let daemon = try world.daemon(log: CapturedLog())
            do {
                try await daemon.run()
                Issue.record("the daemon ran with a regular file at its socket path")
            } catch {
                guard case .socketFile = error else { throw error }
                #expect(error.description.contains(world.socketPath), "\(error)")
            }
        }
    }
}
