import ArgumentParser
import CookieJar
import Foundation
import JSON
import Locking
import Platform
import Sessions
import SiteConfig
import SocketClient
import SocketRoutes

/// `sessionkeeper exec SITE [--url U] [--signal SIG] -- CMD...` (SPEC section 9): runs a command with a
/// site's session in its environment and in a private cookie file.
struct ExecCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Run a command with a site's cookies in its environment and in a private cookie file.",
        discussion: """
            The command gets SESSIONKEEPER_COOKIE (the Cookie header value), SESSIONKEEPER_COOKIE_FILE (a \
            Netscape cookies.txt, mode 0600 in a folder of mode 0700, removed when the command ends, however \
            it ends), SESSIONKEEPER_USER_AGENT (the User-Agent the session was made with, when known) and \
            SESSIONKEEPER_SOCKET. Unlike plugins, the command inherits this process's whole environment: it \
            is your own command. It runs without a shell, shares this terminal, and SIGINT, SIGTERM and \
            SIGHUP sent to sessionkeeper are passed on to it. With --signal SIG, whenever the daemon reports \
            new cookies for the site the file is rewritten (atomically) and the command gets SIG; \
            SESSIONKEEPER_COOKIE keeps the value it started with. With no daemon the session comes from the \
            vault, with a note that nothing keeps it fresh (--signal needs the daemon). Exit status: the \
            command's own, 128+N when signal N ended it, 127 when it cannot be started; before it starts, \
            1, 2 or 3 as for 'cookie'.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Option(name: .long, help: "Only the cookies a request to this URL carries.")
    var url: String?

    @Option(name: .long, help: ArgumentHelp("Send this signal (HUP, USR1, 10, ...) to the command when the cookies change.", valueName: "signal"))
    var signal: String?

    @OptionGroup var socket: SocketOptions

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    /// The file's name inside the private folder.
    static let cookieFileName = "cookies.txt"

    func run() async throws {
        try await reportingFailures {
            guard let program = command.first else {
                throw CLIFailure.usage("no command given: write it after --, as in 'sessionkeeper exec \(site) -- curl ...'")
            }
            let requestURL = try url.map(JarOptions.parseURL)
            let reloadSignal = try signal.map(Self.parseSignal)
            let daemon = try socket.daemonSocket()
            let path = daemon.path
            let client = DaemonClient(daemon)

            // Subscribed before the cookies are read, so no change falls between the two.
            var events: ServerSentEventStream?
            let session: ExecSession
            do throws(DaemonClientError) {
                if reloadSignal != nil { events = try client.events() }
                session = try ExecSession.fetch(site: site, client: client, url: requestURL)
            } catch .unreachable(let cause) {
                if reloadSignal != nil {
                    throw CLIFailure(message: "--signal follows the daemon's events: " + CLIFailure.unreachableMessage(cause), code: Exit.daemonUnreachable)
                }
                session = try await ExecSession.stored(site: site, config: socket.config, url: requestURL)
                Console.err(StoredSession.staleNote(socket: path))
            } catch {
                events?.close()
                throw CLIFailure(error, site: site, client: client)
            }

            let folder: PrivateTemporaryFolder
            do {
                folder = try PrivateTemporaryFolder.create(prefix: "sessionkeeper-exec-")
            } catch {
                events?.close()
                throw CLIFailure.failed("cannot create a private folder for the cookie file: \(error)")
            }
            let file = CookieFile(path: folder.file(Self.cookieFileName))
            let status: Int32
            do {
                try file.write(session.cookies)
                status = try await runCommand(
                    program, session: session, file: file, events: events, signal: reloadSignal, url: requestURL, client: client)
            } catch {
                events?.close()
                file.stop()
                Self.remove(folder)
                throw error
            }
            events?.close()
            file.stop()
            Self.remove(folder)
            // Straight out with the command's status: through ArgumentParser, a status of 64 (EX_USAGE)
            // would be taken for a usage error of sessionkeeper's own.
            Foundation.exit(status)
        }
    }

    /// Starts the command, follows the events while it runs, and gives its exit status as a shell would.
    private func runCommand(
        _ program: String, session: ExecSession, file: CookieFile, events: ServerSentEventStream?, signal reloadSignal: Int32?,
        url requestURL: URL?, client: DaemonClient
    ) async throws -> Int32 {
        var environment = ProcessInfo.processInfo.environment
        environment["SESSIONKEEPER_COOKIE"] = session.header
        environment["SESSIONKEEPER_COOKIE_FILE"] = file.path
        environment["SESSIONKEEPER_SOCKET"] = client.socket
        environment["SESSIONKEEPER_USER_AGENT"] = session.userAgent
        let child = Locked<AttachedChild?>(nil)
        let follower = events.map { stream in
            EventFollower(stream: stream, site: site, client: client, url: requestURL, file: file) {
                if let reloadSignal { _ = child.withLock { $0 }?.send(reloadSignal) }
            }
        }
        follower?.start()
        let termination: ProcessTermination
        do {
            termination = try await ChildProcess.runAttached(
                executable: program, arguments: Array(command.dropFirst()), environment: ChildEnvironment(exactly: environment),
                forwarded: [SIGINT, SIGTERM, SIGHUP], started: { started in child.withLock { $0 = started } })
        } catch {
            Console.err("sessionkeeper: \(error)")
            return 127
        }
        switch termination {
        case .exited(let code): return code
        case .signaled(let number): return 128 + number
        case .timedOut, .cancelled: return 1
        }
    }

    private static func remove(_ folder: PrivateTemporaryFolder) {
        do {
            try folder.remove()
        } catch {
            Console.err("sessionkeeper: warning: could not remove the cookie folder: \(error)")
        }
    }

    /// `HUP`, `SIGHUP`, `hup` or a number.
    static func parseSignal(_ text: String) throws -> Int32 {
        let names: [String: Int32] = [
            "HUP": SIGHUP, "INT": SIGINT, "QUIT": SIGQUIT, "USR1": SIGUSR1, "USR2": SIGUSR2, "TERM": SIGTERM,
            "ALRM": SIGALRM, "CONT": SIGCONT, "WINCH": SIGWINCH, "PIPE": SIGPIPE,
        ]
        var name = text.uppercased()
        if name.hasPrefix("SIG") { name.removeFirst(3) }
        if let number = names[name] { return number }
        if let number = Int32(text), number > 0, number < 65 { return number }
        throw CLIFailure.usage("--signal: '\(text)' is not a signal (HUP, INT, QUIT, USR1, USR2, TERM, ALRM, CONT, WINCH or a number)")
    }
}

/// What `exec` hands the command.
struct ExecSession {
    /// What the cookie file holds: every host's cookies, or `--url`'s.
    var cookies: [Cookie]
    /// `SESSIONKEEPER_COOKIE`: the Cookie header of one request, `--url`'s or the site's `base_url`'s (an
    /// identity provider's cookies of the same names stay out).
    var header: String
    var userAgent: String?

    /// From the daemon: the session's cookies (json, chosen for `url` here by the jar's rules, as the
    /// vault path does), the header for `url` or, without it, as the daemon answers it for `base_url`, and
    /// its User-Agent.
    static func fetch(site: String, client: DaemonClient, url: URL?) throws(DaemonClientError) -> ExecSession {
        let info = SiteStatus(try client.json(.site, site: site))
        let cookies = try cookies(site: site, client: client, url: url)
        var header = CookieCodec.encode(cookies, as: .header)
        if url == nil {
            let body = try client.request(.cookies, site: site, query: [(.format, "header")]).body
            header = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .newlines)
        }
        return ExecSession(cookies: cookies, header: header, userAgent: info.userAgent)
    }

    static func cookies(site: String, client: DaemonClient, url: URL?) throws(DaemonClientError) -> [Cookie] {
        let body = try client.request(.cookies, site: site, query: [(.format, "json")]).body
        do {
            let cookies = try CookieCodec.decode(String(decoding: body, as: UTF8.self), as: .json, url: nil, now: Date())
            return SessionCookies.select(cookies, url: url, now: Date())
        } catch {
            throw .exchange(.malformedResponse(socket: client.socket, reason: "the cookies are not the json format: \(error)"))
        }
    }

    /// From the vault, when no daemon answers.
    static func stored(site: String, config: ConfigOptions, url: URL?) async throws -> ExecSession {
        let (daemonConfig, definition) = try LoginSetup.load(site: site, explicitConfig: config.path)
        let record = try await VaultAccess.storedSession(site: definition, config: daemonConfig)
        let now = Date()
        let header = CookieCodec.encode(SessionCookies.select(record.cookies, url: url ?? definition.baseURL, now: now), as: .header)
        return ExecSession(cookies: SessionCookies.select(record.cookies, url: url, now: now), header: header, userAgent: record.userAgent)
    }
}

/// The private cookie file: written whole and atomically, never again once ``stop()`` was called (the
/// folder is about to be removed).
final class CookieFile: Sendable {
    let path: String
    private let stopped = Locked(false)

    init(path: String) { self.path = path }

    func write(_ cookies: [Cookie]) throws {
        try stopped.withLock { stopped in
            guard !stopped else { return }
            do {
                try DurableFile.write(Array(CookieCodec.encode(cookies, as: .netscape).utf8), to: path, mode: 0o600)
            } catch {
                throw CLIFailure.failed("cannot write the cookie file: \(error)")
            }
        }
    }

    func stop() { stopped.withLock { $0 = true } }

    /// True once the command ended and the file is about to go.
    var isStopped: Bool { stopped.withLock { $0 } }
}

/// Follows the daemon's events on a thread of its own: on each cookie change of the site, reads the new
/// cookies, rewrites the file and calls `changed`.
final class EventFollower: Sendable {
    private let stream: ServerSentEventStream
    private let site: String
    private let client: DaemonClient
    private let url: URL?
    private let file: CookieFile
    private let changed: @Sendable () -> Void

    init(stream: ServerSentEventStream, site: String, client: DaemonClient, url: URL?, file: CookieFile, changed: @escaping @Sendable () -> Void) {
        self.stream = stream
        self.site = site
        self.client = client
        self.url = url
        self.file = file
        self.changed = changed
    }

    func start() {
        Thread.detachNewThread { [self] in follow() }
    }

    private func follow() {
        while true {
            let event: ServerSentEvent?
            do {
                event = try stream.next()
            } catch {
                Console.err("sessionkeeper: warning: the daemon's event stream failed (\(error)); the cookie file is no longer updated")
                return
            }
            guard let event else {
                if !file.isStopped {
                    Console.err("sessionkeeper: warning: the daemon ended its event stream; the cookie file is no longer updated")
                }
                return
            }
            guard event.event == "cookies", let data = try? JSONValue.parse(event.data),
                  case .string(let name)? = data["site"], name == site
            else { continue }
            do {
                try file.write(try ExecSession.cookies(site: site, client: client, url: url))
                changed()
            } catch let error as DaemonClientError {
                Console.err("sessionkeeper: warning: cannot read the new cookies: \(CLIFailure(error, site: site).message)")
            } catch {
                Console.err("sessionkeeper: warning: \(error)")
            }
        }
    }
}
