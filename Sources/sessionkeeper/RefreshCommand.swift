import ArgumentParser
import CookieJar
import Foundation
import JSON
import SocketRoutes

/// `sessionkeeper refresh SITE [--wait D]` (SPEC section 9): a login through the running daemon.
struct RefreshCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Make the running daemon log a site in now.",
        discussion: """
            POST /v1/sites/SITE/refresh. Without --wait the login starts and the command returns; with \
            --wait it waits up to that long for the login to finish and says how it ended: a new session, \
            or why not and whether the old session is still served. Exit status: 0 started (with --wait: a \
            new login succeeded); 1 the login failed, the wait ran out, or the daemon refused; 2 usage or \
            an unknown site; 3 no daemon runs.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Option(name: .long, help: ArgumentHelp("Wait up to this long (e.g. 30s) for the login to finish.", valueName: "duration"))
    var wait: String?

    @OptionGroup var socket: SocketOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let waitFor = try wait.map { try CookieCommand.duration($0, option: "--wait") }
            let client = DaemonClient(try socket.daemonSocket()).waiting(waitFor)
            let answer: JSONValue
            do throws(DaemonClientError) {
                answer = try client.json(.refresh, site: site, query: [(.wait, wait)])
            } catch {
                throw CLIFailure(error, site: site, client: client)
            }
            guard waitFor != nil else {
                Console.out("login of \(site) started")
                return
            }
            let status = SiteStatus(answer)
            // The login this request waited for, not the site's state: a failed login leaves a site valid
            // while its old session lasts.
            guard case .string(let outcome)? = answer["login"]?["outcome"] else {
                throw CLIFailure.failed("the daemon's answer does not say how the login of '\(site)' ended")
            }
            guard outcome == "ok" else {
                var reason = "the login of '\(site)' failed (\(outcome))"
                if case .string(let error)? = answer["login"]?["error"] { reason += ": \(error)" }
                if answer["session_served"] == .bool(true) {
                    reason += "; the old session is still served" + (status.expiresAt.map { " (until \(CookieTime.rfc3339($0)))" } ?? "")
                } else {
                    reason += "; no session is served"
                }
                throw CLIFailure.failed(reason)
            }
            Console.out("\(site): logged in, valid" + (status.expiresAt.map { " until \(CookieTime.rfc3339($0))" } ?? ""))
        }
    }
}
