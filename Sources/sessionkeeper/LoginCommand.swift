import ArgumentParser
import Assembly
import CookieJar
import Credentials
import CurlTransport
import Foundation
import HTTPTransport
import LoginFlow
import Platform
import SiteConfig
import Sessions
import Vault

/// `sessionkeeper login SITE [--verbose] [--check] [--jar FILE] [--fresh] [--config PATH]` (SPEC section 9):
/// runs one site's login in the foreground over libcurl, showing each request as it happens, and keeps the
/// resulting session in the vault (and with `--jar` in a jar file); with `--check`, runs the site's check on it.
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Run one site's login flow in the foreground and store the session in the vault.",
        discussion: """
            Before the flow, the site's stored session is restored from the vault into the jar (as a browser \
            keeps a "remember this device" cookie); --fresh starts from an empty jar. Each request is shown \
            on standard error (method, URL without its query, status, milliseconds); no secret or cookie \
            value is ever printed. On success the cookies are stored in the vault as the site's session \
            (session cookies left out when the site sets persist_session_cookies: false) and the last line \
            names the essential cookies and when they expire. A `prompt` step asks on the terminal without \
            echo (without a terminal, standard input gives one answer). With --check the site's check: runs on the \
            new session right after (the end-to-end try of a new site file; `probe SITE` runs the check alone). \
            Exit status: 0 logged in (and with --check, the check passes), 1 the flow or the check failed, \
            2 usage, configuration or vault key error.
            """
    )

    @Argument(help: "The site's name (its file name in sites_dir without .yaml, or its name: key).")
    var site: String

    @Flag(
        name: [.customShort("v"), .long],
        help: """
            Also show restored cookie names, step timings, the cookies each step set (names), each request's \
            query parameter names, plugin output and what was stored. Twice (-vv): each query as sent (values \
            from credentials masked), every request's and response's headers, each cookie stored, refused or evicted with the reason, \
            and the start of each body, for debugging a new site file (cookie values and secrets masked).
            """)
    var verbose: Int

    @Option(name: .long, help: "Also merge the cookies into this jar file as curl -b F -c F does (a new .json: lossless json; otherwise Netscape cookies.txt), mode 0600; '-' is standard output.")
    var jar: String?

    @Flag(name: .long, help: "Start from an empty jar instead of the session stored in the vault.")
    var fresh = false

    @Flag(name: .long, help: "Run the site's check on the new session right after the login; fail if it does not pass.")
    var check = false

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            try VaultAccess.protectProcess()
            let (daemonConfig, definition) = try LoginSetup.load(site: site, explicitConfig: config.path)
            // A --jar that cannot be written (not a jar, not a regular file) is refused before any request.
            if let jar { try JarFiles.checkWritable(jar, now: Date()) }
            guard definition.enabled else {
                throw CLIFailure.usage(
                    "site '\(definition.name)' is disabled (enabled: false in \(definition.file)); "
                        + "set enabled: true to log in")
            }
            if check && definition.check == nil {
                throw CLIFailure.usage("site '\(definition.name)' has no check: in \(definition.file), so --check has nothing to run")
            }
            let progress = LoginProgress(verbosity: verbose, terminal: isatty(STDERR_FILENO) == 1)
            let wiring = try LoginWiring.open(daemonConfig, progress: progress)
            defer { wiring.close() }
            let login = wiring.login

            let result: SiteLoginResult
            do {
                result = try await login.run(
                    definition, start: fresh ? .fresh : .storedSession, events: progress.sink,
                    prompts: TerminalPrompts(beforeAsking: { progress.finish() }))
            } catch {
                progress.finish()
                // A missing credential or environment variable is found before any request: a configuration
                // problem (exit 2), not a failed login.
                if case .flow(let flow)? = error as? SiteLoginError, flow.kind == .credential || flow.kind == .template {
                    throw CLIFailure.usage("\(error)")
                }
                throw CLIFailure.failed("\(error)")
            }
            progress.finish()

            if let jar {
                let now = Date()
                let kept = result.storage.allCookies.filter { !$0.isExpired(at: now) }
                let written = try JarFiles.update(jar, now: now, standardOutput: Console.outRaw) { JarMerge.merge(kept, into: $0, site: definition.baseURL, now: now) }
                progress.note("wrote \(kept.count) cookie(s) to \(jar == "-" ? "standard output" : jar)"
                    + (written.count > kept.count ? " (\(written.count - kept.count) other cookie(s) kept)" : ""))
            }
            // With --jar - the jar is standard output, which then carries nothing else.
            if jar == "-" { Console.err(LoginSummary.line(for: result.flow)) } else { Console.out(LoginSummary.line(for: result.flow)) }
            if let failure = result.outputFailures.first {
                let more = result.outputFailures.count > 1 ? " (and \(result.outputFailures.count - 1) more output file(s))" : ""
                throw CLIFailure.failed("logged in and stored the session, but \(failure)\(more)")
            }
            if check, let probe = definition.check {
                let passed = try await CheckRun.run(
                    login, site: definition, check: probe, session: result.record, progress: progress,
                    failurePrefix: "logged in and stored the session, but ")
                if jar == "-" { Console.err(passed) } else { Console.out(passed) }
            }
        }
    }
}

/// Finding the config and the site.
enum LoginSetup {
    /// The config and the named site; any configuration problem is a usage failure (exit 2) whose message
    /// lists every diagnostic as `FILE:LINE:COLUMN: error: message`.
    static func load(site name: String, explicitConfig: String?) throws -> (DaemonConfig, SiteDefinition) {
        let loader = ConfigurationLoader()
        let path: String
        do {
            path = try loader.locateConfig(explicit: explicitConfig)
        } catch {
            throw CLIFailure.usage(error.description)
        }
        let daemonConfig: DaemonConfig
        do {
            daemonConfig = try loader.loadConfig(at: path)
        } catch {
            throw configFailure(error)
        }
        // The usual case first: sites/NAME.yaml (or .yml). Only that file is parsed, so a broken other site
        // does not stop this one's login.
        for fileExtension in ConfigurationLoader.siteFileExtensions {
            let file = (daemonConfig.sitesDirectory as NSString).appendingPathComponent("\(name).\(fileExtension)")
            guard Syscall.exists(file) else { continue }
            do {
                let definition = try loader.loadSite(at: file, config: daemonConfig)
                if definition.name == name { return (daemonConfig, definition) }
            } catch {
                throw configFailure(error)
            }
        }
        // A site may name itself differently from its file: look through all of them.
        let all = loader.loadSites(config: daemonConfig)
        if let definition = all.sites.first(where: { $0.name == name }) { return (daemonConfig, definition) }
        if !all.failures.isEmpty {
            for failure in all.failures {
                for line in DiagnosticRenderer(showSource: false).render(failure, source: nil) { Console.err(line) }
            }
            throw CLIFailure.usage("no site named '\(name)' could be loaded from \(daemonConfig.sitesDirectory); the files above have errors")
        }
        let known = all.sites.map(\.name).sorted()
        throw CLIFailure.usage(
            "no site named '\(name)' in \(daemonConfig.sitesDirectory)"
                + (known.isEmpty ? " (the folder has no site files)" : " (sites: \(known.joined(separator: ", ")))")
                + (Spelling.closest(to: name, among: known).map { "; did you mean '\($0)'?" } ?? ""))
    }

    /// Prints every diagnostic on its own line, as `check` does (compilers' format, which editors can jump
    /// to), and gives the usage exit status.
    private static func configFailure(_ error: ConfigError) -> ExitCode {
        for line in DiagnosticRenderer(showSource: false).render(error, source: nil) { Console.err(line) }
        return ExitCode(Exit.usage)
    }
}

/// The last line of a successful login: essential cookie names and expiry times, never values.
enum LoginSummary {
    static func line(for result: FlowResult) -> String {
        let essentials = result.essentialCookies
        guard !essentials.isEmpty else {
            return "logged in to \(result.site): \(result.cookies.count) cookie(s) stored (no essential cookies declared)"
        }
        let parts = essentials.map { cookie in
            "\(cookie.label) " + (cookie.expires.map { "until \(CookieTime.rfc3339($0))" } ?? "(session cookie)")
        }
        return "logged in to \(result.site): \(parts.joined(separator: ", "))"
    }
}
