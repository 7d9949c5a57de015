import ArgumentParser
import CookieJar
import Foundation
import JSON

/// `sessionkeeper refresh SITE [--wait D]` (SPEC section 9): a login through the running daemon.
struct RefreshCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Make the running daemon log a site in now.",
        discussion: """
            POST /v1/sites/SITE/refresh. Without --wait the login starts and the command returns; with \
            --wait it waits up to that long for the login to finish and prints the site's new state. \
            Exit status: 0 started (or, with --wait, logged in); 1 the login failed, the wait ran out, or \
            the daemon refused; 2 usage or an unknown site; 3 no daemon runs.
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
            let client = DaemonClient(socket: try socket.socketPath()).waiting(waitFor)
            let answer: JSONValue
            do throws(DaemonClientError) {
                answer = try client.json("POST", DaemonClient.sitePath(site, "/refresh"), query: [("wait", wait)])
            } catch {
                throw CLIFailure(error, site: site)
            }
            guard waitFor != nil else {
                Console.out("login of \(site) started")
                return
            }
            let status = SiteStatus(answer)
            guard status.state == "valid" else {
                throw CLIFailure.failed(
                    "site '\(site)' is \(status.state) after the login" + (status.lastError.map { ": \($0)" } ?? ""))
            }
            Console.out("\(site): valid" + (status.expiresAt.map { " until \(CookieTime.rfc3339($0))" } ?? ""))
        }
    }
}
