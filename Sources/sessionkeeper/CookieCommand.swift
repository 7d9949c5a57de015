import ArgumentParser
import CookieJar
import Daemon
import Foundation
import Sessions
import SiteConfig
import SocketRoutes

/// `sessionkeeper cookie SITE [--url U] [--format F] [--min-valid M] [--wait D]` (SPEC section 9): a site's
/// current cookies from the running daemon, else from the vault.
struct CookieCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cookie",
        abstract: "Print a site's current cookies from the running daemon (or, with none running, from the vault).",
        discussion: """
            Asks the daemon over its socket (GET /v1/sites/SITE/cookies) and prints its answer as it is. When \
            no daemon answers, the session stored in the vault is printed instead, with a note on standard \
            error that nothing keeps it fresh; then --min-valid is checked against the stored expiry, and \
            --wait or --min-valid that would need a login exits 3. Without --url every live cookie of the \
            session is printed. Exit status: 0 printed; 1 no valid session (503), the wait ran out (504), \
            access refused (403) or nothing stored; 2 usage, an unknown site or a request the daemon calls \
            invalid; 3 no daemon, and a login would be needed.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Option(name: .long, help: "Only the cookies a request to this URL carries.")
    var url: String?

    @Option(name: .long, help: "header (default), json, netscape, playwright or set-cookie.")
    var format: String = CookieFormat.header.rawValue

    @Option(name: .customLong("min-valid"), help: ArgumentHelp("Only a session whose essential cookies stay valid this much longer (e.g. 10m); else the daemon logs in.", valueName: "duration"))
    var minValid: String?

    @Option(name: .long, help: ArgumentHelp("Wait up to this long (e.g. 30s) for a login when no such session exists now.", valueName: "duration"))
    var wait: String?

    @OptionGroup var socket: SocketOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let outputFormat = try JarOptions.parseFormat(format, option: "--format")
            let requestURL = try url.map(JarOptions.parseURL)
            let minimum = try minValid.map { try Self.duration($0, option: "--min-valid") }
            let waitFor = try wait.map { try Self.duration($0, option: "--wait") }
            let daemon = try socket.daemonSocket()
            let path = daemon.path
            let client = DaemonClient(daemon).waiting(waitFor)
            do throws(DaemonClientError) {
                let answer = try client.request(
                    .cookies, site: site, query: [(.format, outputFormat.rawValue), (.url, url), (.minValid, minValid), (.wait, wait)])
                Console.outRaw(String(decoding: answer.body, as: UTF8.self))
            } catch .unreachable(_) {
                try printStored(format: outputFormat, url: requestURL, minimum: minimum, waits: waitFor != nil, socket: path)
            } catch {
                throw CLIFailure(error, site: site, client: client)
            }
        }
    }

    /// The vault's session, when no daemon answers.
    private func printStored(format: CookieFormat, url: URL?, minimum: Duration?, waits: Bool, socket path: String) throws {
        let (config, definition) = try LoginSetup.load(site: site, explicitConfig: socket.config.path)
        let record = try waitingFor { try await VaultAccess.storedSession(site: definition, config: config) }
        Console.err(StoredSession.staleNote(socket: path))
        let now = Date()
        if let expiry = record.expiresAt, !ServedSession.isFit(until: expiry, at: now, minValid: minimum) {
            let problem = expiry <= now
                ? "the stored session of site '\(site)' expired at \(CookieTime.rfc3339(expiry))"
                : "the stored session of site '\(site)' expires at \(CookieTime.rfc3339(expiry)), sooner than --min-valid asks"
            // Only a login would help, and only the daemon logs in for this command.
            if waits || minimum != nil {
                throw CLIFailure(message: "\(problem); a login is needed and no daemon runs to do it: start it with 'sessionkeeper run'", code: Exit.daemonUnreachable)
            }
            throw CLIFailure.failed("\(problem); start the daemon ('sessionkeeper run') or log in again")
        }
        let origins = url.map { url in record.origins.filter { $0.isOrigin(of: url) } } ?? record.origins
        // A header is one request's: the base_url's unless --url names another (as the daemon answers it).
        let selectFor = url ?? (format == .header ? definition.baseURL : nil)
        Console.outRaw(SessionCookies.text(SessionCookies.select(record.cookies, url: selectFor, now: now), as: format, origins: origins))
    }

    /// A `--min-valid`/`--wait` value, or a usage error.
    static func duration(_ text: String, option: String) throws -> Duration {
        guard let duration = DurationText.parse(text) else {
            throw CLIFailure.usage("\(option): '\(text)' is not a duration such as 30s, 10m or 1h")
        }
        return duration
    }
}
