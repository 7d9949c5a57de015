import ArgumentParser
import Assembly
import Foundation
import Locking
import LoginFlow
import Platform
import Sessions
import SiteConfig

/// `sessionkeeper probe SITE` (SPEC section 9): the site's `check` on the stored session, without logging in:
/// what was sent, what was expected and what was found.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Run a site's check now on its stored session, without logging in.",
        discussion: """
            Sends the site's check: request with the session stored in the vault (its live cookies and its \
            User-Agent), as the daemon does, and shows the request (method and URL, never a cookie value), \
            what the check expects and what the site answered. The way to try a check by hand; `login SITE \
            --check` tries a login and its check together. Exit status: 0 logged in (the check passes), 1 \
            logged out, no stored session, or the site cannot be reached, 2 usage, configuration or vault key \
            error (a site without check:). Then what the daemon learned of the site's sessions, stored with the \
            session: the idle timeout's and the lifetime's bounds and how many observations back them.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Flag(name: [.customShort("v"), .long], help: "Also show the step timing; twice (-vv): the request's and response's headers and the start of the body (cookie values and secrets masked).")
    var verbose: Int

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            try VaultAccess.protectProcess()
            let (daemonConfig, definition) = try LoginSetup.load(site: site, explicitConfig: config.path)
            guard let check = definition.check else {
                throw CLIFailure.usage("site '\(definition.name)' has no check: in \(definition.file); add one (docs/SITES.md, \"Writing the check\")")
            }
            let progress = LoginProgress(verbosity: verbose, terminal: isatty(STDERR_FILENO) == 1)
            let wiring = try LoginWiring.open(daemonConfig, progress: progress)
            defer { wiring.close() }
            let login = wiring.login
            let session: SessionRecord?
            do {
                session = try await login.store.load(site: definition.name)
            } catch {
                throw CLIFailure.failed("cannot read the stored session of '\(definition.name)': \(error)")
            }
            guard let session else {
                throw CLIFailure.failed(
                    "no session stored for '\(definition.name)': nothing to check (log in with `sessionkeeper login \(definition.name)`)")
            }
            Console.out(try await CheckRun.run(login, site: definition, check: check, session: session, progress: progress))
            // What the daemon learned of the site's sessions, stored with this one (SPEC section 7).
            if let learned = session.learned {
                Console.out("learned idle timeout: \(LearnedBounds(learned.idle).sentence)")
                Console.out("learned lifetime:     \(LearnedBounds(learned.lifetime).sentence)")
            }
        }
    }
}

/// One run of a site's check from the CLI (`probe`, `login --check`), through ``SiteLogin/check(_:session:observer:)``,
/// the daemon's own way to run it; its report names what was sent, expected and found.
enum CheckRun {
    /// Runs the check on `session`; returns the line `SITE: logged in (...)` on success, else throws a failure
    /// whose message says what was sent, what the check expected and what it found (exit 1).
    static func run(
        _ login: SiteLogin, site: SiteDefinition, check: Probe, session: SessionRecord, progress: LoginProgress,
        failurePrefix: String = ""
    ) async throws -> String {
        let sent = Locked<[FlowEvent.Exchange]>([])
        let observer: FlowObserver = { event in
            if case .exchange(let exchange) = event { sent.withLock { $0.append(exchange) } }
            progress.observer(event)
        }
        do {
            let result = try await login.check(site, session: session, observer: observer)
            progress.finish()
            let request = sent.withLock { $0.first }.map { "\($0.method) \($0.url)" } ?? result.url
            return "\(site.name): logged in (check \(request): status \(result.status), every expect of \(check.mark) held)"
        } catch {
            progress.finish()
            var lines = [failurePrefix + (error.isUnreachable ? "\(site.name): the site cannot be reached" : "\(site.name): the check does not pass")]
            for exchange in sent.withLock({ $0 }) {
                let hop = exchange.redirectHop > 0 ? " (redirect \(exchange.redirectHop))" : ""
                lines.append("  sent:     \(exchange.method) \(exchange.url)\(hop) -> \(exchange.status)")
            }
            if let expected = error.expected { lines.append("  expected: \(expected)") }
            if let found = error.found { lines.append("  found:    \(found)") }
            lines.append("  \(error)")
            throw CLIFailure.failed(lines.joined(separator: "\n"))
        }
    }
}
