import CurlTransport
import Daemon
import DemoSite
import Foundation
import JSON
import Locking
import LoginFlow
import Logging
import Platform
import Scheduler
import ServiceLifecycle
import Sessions
import SiteConfig
import SocketAPI
import TestSupport
import Vault

/// A real daemon core for socket tests: the demo site on 127.0.0.1, libcurl, a vault, a ``Keeper`` and the
/// ``SocketServer`` on a socket in a temporary folder, with every log line kept to check that none holds a
/// cookie value. Clients are real `curl --unix-socket` processes.
struct SocketWorld {
    /// The demo site's login, checked every second.
    static func siteYAML(_ base: URL, extra: String = "") -> String {
        demoSiteLoginYAML(baseURL: base, extra: extra)
    }

    struct Credentials: CredentialProvider {
        func value(of name: String, site: String) async throws -> String {
            name == "username" ? "alice" : DemoSite.Configuration.defaultPassword
        }
    }

    /// A client's answer: the HTTP status and the body.
    struct Answer {
        var status: Int
        var body: String
        var json: JSONValue? { try? JSONValue.parse(body) }
        /// `error.code` of a JSON error body.
        var errorCode: String? { json?["error"]?["code"]?.plainText }
    }

    var server: DemoSite.RunningServer
    var client: CurlHTTPClient
    var vault: Vault
    /// The demo site's requests by `METHOD path`.
    var requests: KeyCounter
    var folder: TemporaryFolder
    var keeper: Keeper
    /// Every log line of the keeper and the server, rendered with its metadata.
    var logs: CapturedLog
    var logger: Logger
    var socketPath: String
    var reloads: Counter
    /// How many times a server of this world said it listens.
    var listens: Counter

    final class Counter: Sendable {
        private let value = Locked(0)
        func increment() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    func site(_ name: String = "demo", extra: String = "") throws -> SiteDefinition {
        try site(name, yaml: Self.siteYAML(server.baseURL, extra: extra))
    }

    func site(_ name: String, yaml: String) throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        return try loader.loadSite(text: yaml, file: folder.path("\(name).yaml"), config: loader.defaultConfig(directory: folder.path))
    }

    /// The socket server for this world (not started).
    func socketServer(
        settings: SocketSettings? = nil, metrics: Bool = true, limits: SocketServer.Limits = SocketServer.Limits(),
        now: @escaping @Sendable () -> Date = { Date() }, access: AccessControl? = nil
    ) -> SocketServer {
        SocketServer(
            settings: settings ?? SocketSettings(path: socketPath, mode: 0o666), metricsEnabled: metrics, keeper: keeper,
            reload: { [reloads] in reloads.increment() }, logger: logger, limits: limits, now: now,
            onListening: { [listens] in listens.increment() }, access: access, egressClient: client)
    }

    /// Runs `server` in a service group until `body` returns, then shuts it down gracefully.
    func serving<T>(_ server: SocketServer, _ body: () async throws -> T) async throws -> T {
        let listensBefore = listens.count
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        let running = Task { try await group.run() }
        defer { running.cancel() }
        // The server says when it listens with its mode set; a socket that never comes up fails the test
        // (generous: under ThreadSanitizer with the suite in parallel, 10 s once did not suffice).
        let deadline = ContinuousClock.now + .seconds(30)
        while listens.count == listensBefore {
            guard ContinuousClock.now < deadline else { throw WorldError("the socket server did not start") }
            try await Task.sleep(for: .milliseconds(20))
        }
        do {
            let result = try await body()
            await group.triggerGracefulShutdown()
            try await running.value
            return result
        } catch {
            await group.triggerGracefulShutdown()
            _ = await running.result
            throw error
        }
    }

    /// `curl --unix-socket` as root, or as nobody (uid and gid 65534, no supplementary groups unless given),
    /// with `headers` (`Name: value`) added to the request.
    func curl(
        _ path: String, asNobody: Bool = false, groups: [UInt32]? = nil, maxTime: Int = 30, headers: [String] = []
    ) async throws -> Answer {
        try await curl("GET", path, asNobody: asNobody, groups: groups, maxTime: maxTime, headers: headers)
    }

    func curl(
        _ method: String, _ path: String, body: String? = nil, asNobody: Bool = false, groups: [UInt32]? = nil,
        maxTime: Int = 30, headers: [String] = []
    ) async throws -> Answer {
        var arguments = ["-sS", "--unix-socket", socketPath, "-X", method, "-o", "-", "-w", "\n%{http_code}", "--max-time", "\(maxTime)"]
        arguments += headers.flatMap { ["-H", $0] }
        // No `Expect: 100-continue` pause before a larger body.
        if body != nil { arguments += ["--data-binary", "@-", "-H", "Content-Type: text/plain", "-H", "Expect:"] }
        arguments.append("http://localhost" + path)
        var executable = "/usr/bin/curl"
        if asNobody {
            let groupOption = groups.map { "--groups=" + $0.map(String.init).joined(separator: ",") } ?? "--clear-groups"
            arguments = ["--reuid=65534", "--regid=65534", groupOption, executable] + arguments
            executable = "/usr/bin/setpriv"
        }
        let result = try await runProgram(executable, arguments, input: body.map { Data($0.utf8) })
        let text = result.outputText
        guard let newline = text.lastIndex(of: "\n"), let status = Int(text[text.index(after: newline)...]) else {
            throw WorldError("curl gave no status (exit \(result.status)): \(result.errorText)")
        }
        return Answer(status: status, body: String(text[..<newline]))
    }

    /// Runs a Python client on one connection to the socket: `script` runs with `s`, a socket already connected
    /// to it, and `os`, `socket`, `sys` and `time` imported; `arguments` follow the socket path in `sys.argv`.
    /// Lines of a ``socketClient(_:arguments:)`` script: append what the daemon sends to `answer` (which the
    /// script defines first) until it closes the connection or stays silent for `silence` seconds.
    static func readUntilClosed(silence: Int = 5) -> String {
        """
        s.settimeout(\(silence))
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
        """
    }

    func socketClient(_ script: String, arguments: [String] = []) async throws -> ProgramResult {
        let prelude = "import os, socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
        return try await runProgram("/usr/bin/env", ["python3", "-c", prelude + script, socketPath] + arguments)
    }

    /// Every cookie value the vault holds for `sites`, for "never in a log line" checks (values shorter than
    /// 8 characters would match by chance).
    func storedCookieValues(_ sites: [String]) async throws -> [String] {
        var values: [String] = []
        let store = VaultSessionStore(vault: vault)
        for site in sites {
            values += (try await store.load(site: site))?.cookies.map(\.value) ?? []
        }
        return values.filter { $0.count >= 8 }
    }

    static func withWorld(
        sessionMaxAge: Int = 3600, sliding: Bool = false, socketFolderMode: Int16 = 0o755,
        _ body: (SocketWorld) async throws -> Void
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        // The socket's folder is traversable by nobody for the peer tests; /tmp's sticky folder lets it in.
        let socketFolder = folder.path("run")
        try FileManager.default.createDirectory(atPath: socketFolder, withIntermediateDirectories: true)
        try Syscall.chmod(folder.path, 0o755)
        try Syscall.chmod(socketFolder, mode_t(socketFolderMode))
        let requests = KeyCounter()
        let server = try await DemoSite.start(
            configuration: DemoSite.Configuration(port: 0, sessionMaxAge: sessionMaxAge, sliding: sliding), requestLog: { requests.add("\($0.method) \($0.path)") })
        let client = try CurlHTTPClient()
        let state = folder.path("state")
        let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: state + "/master.key"), createIfMissing: true)
        let logs = CapturedLog()
        let logger = logs.logger(label: "socket-test")
        let login = SiteLogin(
            client: client, store: VaultSessionStore(vault: vault), credentials: { _ in Credentials() }, environment: [:])
        let keeper = Keeper(
            login: login, settings: SchedulerSettings(maxConcurrentLogins: 4, perHostInterval: .zero, jitter: 0), logger: logger)
        let world = SocketWorld(
            server: server, client: client, vault: vault, requests: requests, folder: folder, keeper: keeper, logs: logs,
            logger: logger, socketPath: socketFolder + "/sk.sock", reloads: Counter(), listens: Counter())
        do {
            try await body(world)
        } catch {
            await keeper.stopAll()
            vault.close()
            client.shutdown()
            await server.stop()
            throw error
        }
        await keeper.stopAll()
        vault.close()
        client.shutdown()
        await server.stop()
    }
}

struct WorldError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
