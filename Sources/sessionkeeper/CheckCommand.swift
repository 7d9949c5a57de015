import ArgumentParser
import Foundation
import JSON
import Platform
import Sessions
import SiteConfig
import SocketClient

/// `sessionkeeper check [FILES...]`: validates config.yaml and site files (SPEC section 9), printing
/// every problem as `FILE:LINE:COLUMN: error: message` (with the source line and a caret on a
/// terminal), then a summary. Exit 1 when anything is wrong, 2 for usage errors.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate config.yaml and site files.",
        discussion: """
            Without FILES, checks the config and every site in its sites_dir. A FILE named config.yaml \
            (or config.yml) is checked as the daemon's config, any other as a site file, with the \
            config's defaults and plugins_dir. Problems are printed on standard error as \
            FILE:LINE:COLUMN: error: MESSAGE, as compilers print them; on a terminal each is followed by the \
            offending line (credential values redacted). When the daemon runs, a setting that contradicts what it \
            learned of a site's sessions (a keepalive.every as long as the learned idle timeout, a \
            refresh.max_age past the learned lifetime) is a warning. Exit status: 0 no problems, 1 problems found, 2 a \
            FILE that does not exist or no config to check.
            """
    )

    @Argument(help: "Files to check (default: the config and every site in sites_dir).")
    var files: [String] = []

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            let loader = ConfigurationLoader()
            let current = FileManager.default.currentDirectoryPath
            let renderer = DiagnosticRenderer(showSource: isatty(STDERR_FILENO) == 1) { path in
                path.hasPrefix(current + "/") ? String(path.dropFirst(current.count + 1)) : path
            }
            var report = CheckReport(renderer: renderer)
            report.learned = Self.learnedByTheDaemon(config: config, loader: loader)

            // A file named on the command line that is not there is a usage error, not a finding.
            for file in files where !Syscall.exists(file) {
                throw CLIFailure.usage("\(file): no such file")
            }
            if files.isEmpty {
                let configPath = try config.locate(loader)
                if let daemonConfig = report.checkConfig(configPath, loader: loader) {
                    report.record(sites: loader.loadSites(config: daemonConfig))
                } else {
                    // Without a valid config its sites_dir and defaults are unknown: checking sites against
                    // guessed ones would only add errors that are not there.
                    report.note("the sites were not checked: fix config.yaml first")
                }
            } else {
                let configFiles = files.filter { Self.isConfigFile($0) }
                let siteFiles = files.filter { !Self.isConfigFile($0) }
                var daemonConfig: DaemonConfig?
                for file in configFiles { daemonConfig = report.checkConfig(file, loader: loader) ?? daemonConfig }
                if !siteFiles.isEmpty && daemonConfig == nil {
                    // Sites need the config's defaults and plugins_dir; without a config, the built-in defaults apply.
                    if config.isGiven(loader) {
                        let path = try config.locate(loader)
                        daemonConfig = report.checkConfig(path, loader: loader)
                    }
                }
                let effective = daemonConfig ?? loader.defaultConfig(directory: current)
                for file in siteFiles { report.checkSite(file, loader: loader, config: effective) }
            }

            report.printSummary()
            if report.errorCount > 0 { throw ExitCode(Exit.failed) }
        }
    }

    /// What the running daemon learned of each site's sessions (SPEC section 7), by site; empty when no daemon
    /// answers (nothing learned to compare with is no finding).
    static func learnedByTheDaemon(config: ConfigOptions, loader: ConfigurationLoader) -> [String: LearnedLifetimes] {
        guard let lookup = try? config.loadSocketLookup(loader) else { return [:] }
        let owner = (try? Syscall.stat(lookup.stateDirectory))?.ownerUID
        let client = DaemonClient(DaemonSocket(path: lookup.socket.path, trust: ServerTrust(daemonUID: owner)), timeout: .seconds(5))
        guard let body = try? client.request(.sites).body, let answer = try? JSONValue.parse(Array(body)),
              case .array(let sites)? = answer["sites"]
        else { return [:] }
        var learned: [String: LearnedLifetimes] = [:]
        for site in sites.map(SiteStatus.init) {
            guard let bounds = site.learned else { continue }
            learned[site.name] = LearnedLifetimes(idle: bounds.idle.lifetimeBounds, lifetime: bounds.lifetime.lifetimeBounds)
        }
        return learned
    }

    static func isConfigFile(_ path: String) -> Bool {
        ["config.yaml", "config.yml"].contains((path as NSString).lastPathComponent)
    }
}

/// Counts and prints what `check` finds.
private struct CheckReport {
    let renderer: DiagnosticRenderer
    private(set) var fileCount = 0
    private(set) var errorCount = 0
    private(set) var warningCount = 0
    private var failedFiles = Set<String>()
    /// What the running daemon learned, by site: settings that contradict it are warnings.
    var learned: [String: LearnedLifetimes] = [:]

    init(renderer: DiagnosticRenderer) {
        self.renderer = renderer
    }

    /// Checks a config file; its config when valid.
    mutating func checkConfig(_ path: String, loader: ConfigurationLoader) -> DaemonConfig? {
        fileCount += 1
        do {
            return try loader.loadConfig(at: path)
        } catch {
            print(error)
            return nil
        }
    }

    mutating func checkSite(_ path: String, loader: ConfigurationLoader, config: DaemonConfig) {
        fileCount += 1
        do {
            printWarnings(of: try loader.loadSite(at: path, config: config))
        } catch {
            print(error)
        }
    }

    mutating func record(sites result: SiteLoadResult) {
        // Count site files, not errors: a duplicate name is a second error about a file already counted as
        // loaded elsewhere, and an unreadable sites folder is no file at all.
        var files = Set(result.sites.map(\.file))
        for site in result.sites { printWarnings(of: site) }
        for failure in result.failures {
            for diagnostic in failure.diagnostics where !Self.isFolderProblem(diagnostic) { files.insert(diagnostic.mark.file) }
            print(failure)
        }
        fileCount += files.count
    }

    private static func isFolderProblem(_ diagnostic: ConfigDiagnostic) -> Bool {
        diagnostic.message.hasPrefix("cannot list the sites folder")
    }

    /// A line that is not a diagnostic (on stderr with them).
    func note(_ text: String) {
        Console.err("sessionkeeper: note: \(text)")
    }

    mutating func print(_ error: ConfigError) {
        errorCount += error.diagnostics.count
        for file in Set(error.diagnostics.map(\.mark.file)) { failedFiles.insert(file) }
        // The source is read again only to show lines on a terminal.
        let source = renderer.showSource
            ? error.diagnostics.first.flatMap { ConfigurationLoader.sourceText(of: $0.mark.file) } : nil
        for line in renderer.render(error, source: source) { Console.err(line) }
    }

    /// A site that loaded can still have warnings (an `outputs:` mode others may read): shown, not counted as errors.
    mutating func printWarnings(of site: SiteDefinition) {
        let all = site.warnings + (learned[site.name]?.contradictions(in: site) ?? [])
        guard !all.isEmpty else { return }
        warningCount += all.count
        let warnings = ConfigError(all)
        let source = renderer.showSource ? ConfigurationLoader.sourceText(of: site.file) : nil
        for line in renderer.render(warnings, source: source) { Console.err(line) }
    }

    func printSummary() {
        let files = fileCount == 1 ? "1 file" : "\(fileCount) files"
        let warnings = warningCount == 0 ? "" : warningCount == 1 ? ", 1 warning" : ", \(warningCount) warnings"
        if errorCount == 0 {
            Console.err("checked \(files): no problems\(warnings)")
        } else {
            let errors = errorCount == 1 ? "1 error" : "\(errorCount) errors"
            let failed = failedFiles.count == 1 ? "1 file" : "\(failedFiles.count) files"
            Console.err("checked \(files): \(errors) in \(failed)\(warnings)")
        }
    }
}
