import ArgumentParser
import Foundation
import JSON
import Platform
import SiteConfig
import SocketClient
import SocketRoutes

/// `--socket` and `--config`, shared by the commands that talk to the running daemon.
struct SocketOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The daemon's socket (default: socket.path of config.yaml).", valueName: "path"))
    var socket: String?

    @OptionGroup var config: ConfigOptions

    /// `--socket`, else config.yaml's `socket.path` (reading config.yaml only then, and of it only `state_dir`
    /// and `socket`: a client given the socket needs no config file at all), and whose server on it is believed
    /// (``ServerTrust``): root, the caller, or the daemon's user, the owner of config.yaml's `state_dir` (read
    /// when a config file is given or sits where one is looked for).
    func daemonSocket() throws -> DaemonSocket {
        let loader = ConfigurationLoader()
        if let socket {
            let state = config.isGiven(loader) ? try? config.loadSocketLookup(loader).stateDirectory : nil
            return DaemonSocket(path: socket, trust: ServerTrust(daemonUID: state.flatMap(Self.owner)))
        }
        let lookup = try config.loadSocketLookup(loader)
        return DaemonSocket(path: lookup.socket.path, trust: ServerTrust(daemonUID: Self.owner(of: lookup.stateDirectory)))
    }

    private static func owner(of path: String) -> UInt32? {
        (try? Syscall.stat(path))?.ownerUID
    }
}

/// Where the daemon is and whose server there the CLI believes.
struct DaemonSocket {
    var path: String
    var trust: ServerTrust
}

/// The daemon's socket API (SPEC section 8) as the CLI uses it: one blocking request a call, over
/// ``UnixSocketHTTPClient``, with the daemon's JSON errors turned into ``DaemonClientError``.
struct DaemonClient {
    let socket: String
    let trust: ServerTrust
    private let http: UnixSocketHTTPClient

    /// `timeout` bounds a whole exchange; a request that asks the daemon to wait gets that wait on top.
    init(_ daemon: DaemonSocket, timeout: Duration = .seconds(30)) {
        socket = daemon.path
        trust = daemon.trust
        http = UnixSocketHTTPClient(socketPath: daemon.path, timeout: timeout, trust: daemon.trust)
    }

    /// A client whose timeout covers `wait` plus the usual margin.
    func waiting(_ wait: Duration?) -> DaemonClient {
        DaemonClient(DaemonSocket(path: socket, trust: trust), timeout: .seconds(30) + (wait ?? .zero))
    }

    /// Sends one request of `route` (its method, its target for `site` with the parameters whose value is set);
    /// a 2xx answer is returned, anything else thrown.
    func request(
        _ route: SocketRoute, site: String? = nil, query: [(QueryParameter, String?)] = [], body: [UInt8] = []
    ) throws(DaemonClientError) -> UnixSocketHTTPResponse {
        let response: UnixSocketHTTPResponse
        do {
            response = try http.send(route.method, route.target(site: site, query: query), body: body)
        } catch {
            if case .notReachable = error { throw .unreachable(error) }
            throw .exchange(error)
        }
        guard (200..<300).contains(response.status) else { throw DaemonClientError(answer: response) }
        return response
    }

    /// A JSON answer, parsed.
    func json(
        _ route: SocketRoute, site: String? = nil, query: [(QueryParameter, String?)] = [], body: [UInt8] = []
    ) throws(DaemonClientError) -> JSONValue {
        let response = try request(route, site: site, query: query, body: body)
        do {
            return try JSONValue.parse(response.body)
        } catch {
            throw .exchange(.malformedResponse(socket: socket, reason: "the body is not JSON (\(error))"))
        }
    }

    /// The events of `GET /v1/events`.
    func events() throws(DaemonClientError) -> ServerSentEventStream {
        do {
            switch try http.openEventStream(SocketRoute.events.target()) {
            case .opened(let stream): return stream
            case .refused(let answer): throw DaemonClientError(answer: answer)
            }
        } catch let error as DaemonClientError {
            throw error
        } catch let error as UnixSocketHTTPError {
            if case .notReachable = error { throw .unreachable(error) }
            throw .exchange(error)
        } catch {
            throw .exchange(.malformedResponse(socket: socket, reason: "\(error)"))
        }
    }
}

/// Why a request to the daemon did not give what was asked.
enum DaemonClientError: Error {
    /// No daemon listens on the socket.
    case unreachable(UnixSocketHTTPError)
    /// The exchange failed after connecting (a timeout, a broken answer).
    case exchange(UnixSocketHTTPError)
    /// The daemon answered with an error: `{"error": {"code", "message"}}` (SPEC section 8).
    case answered(status: Int, code: String?, message: String?)

    init(answer: UnixSocketHTTPResponse) {
        let error = (try? JSONValue.parse(answer.body))?["error"]
        var code: String?
        var message: String?
        if case .string(let text)? = error?["code"] { code = text }
        if case .string(let text)? = error?["message"] { message = text }
        self = .answered(status: answer.status, code: code, message: message)
    }
}

extension CLIFailure {
    /// A daemon error in the user's words, with SPEC section 9's exit codes: no daemon 3; a request the
    /// daemon calls malformed (400) or a site it does not know (404) 2, like any usage error; everything
    /// else (403, 408, 409, 503, 504, a broken exchange) 1; a server at the socket whose user the CLI does not
    /// believe (``ServerTrust``) 2.
    init(_ error: DaemonClientError, site: String? = nil) {
        let what = site.map { "site '\($0)'" } ?? "the request"
        switch error {
        case .unreachable(let cause):
            self.init(message: Self.unreachableMessage(cause), code: Exit.daemonUnreachable)
        case .exchange(let cause):
            // A server the client does not believe is a setting to fix (the socket path, or who runs there),
            // not a failed exchange: exit 2, and never a fall-back to the vault.
            if case .untrustedServer = cause { self = .usage(cause.description) } else {
                self = .failed("the daemon did not answer properly: \(cause)")
            }
        case let .answered(status, code, message):
            let detail = message ?? code ?? "no details"
            // The daemon's messages about a site begin with its name: said once, they read as they are.
            let namesSite = site.map { detail.hasPrefix("site '\($0)'") } ?? false
            switch status {
            case 400: self = .usage("the daemon refused the request: \(detail)")
            // The daemon's own words for an unknown site would only repeat the name.
            case 404 where site != nil && code == "unknown_site": self = .usage("the daemon has no \(what)")
            case 404: self = .usage("the daemon has no \(what): \(detail)")
            case 403: self = .failed("the daemon refuses \(what) to this user (uid \(Syscall.userID)): \(detail)")
            case 409: self = .failed(namesSite ? detail : "\(what): \(detail)")
            case 503 where code == "too_many": self = .failed("the daemon is busy: \(detail)")
            case 503: self = .failed(namesSite ? detail : "no valid session for \(what) yet: \(detail)")
            case 408: self = .failed("the daemon cut the request off: \(detail)")
            case 504: self = .failed(namesSite ? detail : "\(what): the wait ran out before a login finished: \(detail)")
            default: self = .failed("the daemon answered \(status) for \(what): \(detail)")
            }
        }
    }

    /// ``init(_:site:)``, and for a site the daemon does not know, the close name among the sites it shows this
    /// user, as `login` suggests one among the site files (a hidden site is never among them).
    init(_ error: DaemonClientError, site: String, client: DaemonClient) {
        self.init(error, site: site)
        guard case .answered(404, "unknown_site"?, _) = error,
              case .array(let sites)? = try? client.json(.sites)["sites"] else { return }
        let names = sites.compactMap { site -> String? in
            if case .string(let name)? = site["name"] { return name }
            return nil
        }
        if let close = Spelling.closest(to: site, among: names) { message += "; did you mean '\(close)'?" }
    }

    /// Says what is wrong and how to start the daemon.
    static func unreachableMessage(_ cause: UnixSocketHTTPError) -> String {
        "no daemon answers: \(cause); start it with 'sessionkeeper run' (or name its socket with --socket)"
    }
}
