import Foundation
import Locking
import Platform

/// Loads and validates `config.yaml` and site files; the one entry point the daemon, `check` and
/// every other command use.
///
/// Every problem of a file is reported at once, as ``ConfigDiagnostic``s with file, line and column.
public struct ConfigurationLoader: Sendable {
    /// Site files above this size are refused: a login description is a few kilobytes.
    public static let maximumFileSize = 1 << 20
    /// Extensions of site files in `sites_dir`.
    public static let siteFileExtensions = ["yaml", "yml"]

    /// The environment consulted for `$HOME` (`~` in paths) and `$XDG_RUNTIME_DIR` (socket default).
    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    // MARK: config.yaml

    /// Loads `config.yaml` at `path` (made absolute against the current directory).
    public func loadConfig(at path: String) throws(ConfigError) -> DaemonConfig {
        let file = Self.absolute(path)
        return try loadConfig(text: try Self.read(file), file: file)
    }

    /// Loads config text as if it were the file `file` (paths resolve against its folder).
    public func loadConfig(text: String, file: String) throws(ConfigError) -> DaemonConfig {
        try buildConfig(text: text, file: file, empty: ConfigFile(), sensitive: Self.notifyLines) { builder, decoded in builder.build(decoded) }
    }

    /// The daemon's socket settings from `config.yaml` at `path`, reading only its `state_dir` and `socket`:
    /// what a client command (`cookie`, `status`, `refresh`) needs to reach the daemon. The other keys are
    /// neither decoded nor checked (`sessionkeeper check` and the daemon check them), because decoding the
    /// whole file was a third of such a command's start (issue 15). Errors in these two keys are reported as
    /// ``loadConfig(at:)`` reports them.
    public func loadSocketSettings(at path: String) throws(ConfigError) -> SocketSettings {
        try loadSocketLookup(at: path).socket
    }

    /// ``loadSocketSettings(at:)`` with the state folder it names, whose owner is the daemon's user (a client
    /// believes a server of that user: `SocketClient.ServerTrust`).
    public func loadSocketLookup(at path: String) throws(ConfigError) -> (socket: SocketSettings, stateDirectory: String) {
        let file = Self.absolute(path)
        let keys = Set(ConfigFile.SocketLookup.CodingKeys.allCases.map(\.rawValue))
        return try buildConfig(text: try Self.read(file), file: file, empty: ConfigFile.SocketLookup(), only: keys) { builder, lookup in
            let state = builder.buildStateDirectory(lookup.stateDir)
            return (builder.buildSocket(lookup.socket, stateDirectory: state), state)
        }
    }

    /// Decodes `File` from config text (`empty` for a file with nothing in it; with `keys`, from only those
    /// keys of its top mapping) and builds the result with a ``ConfigBuilder`` for the file's folder. Every
    /// diagnostic of parsing, decoding and building is thrown together.
    private func buildConfig<File: Decodable, Built>(
        text: String, file: String, empty: File, only keys: Set<String>? = nil, sensitive: (YAMLNode) -> Set<Int> = { _ in [] },
        _ build: (inout ConfigBuilder, File) -> Built?
    ) throws(ConfigError) -> Built {
        let parsed: Parsed
        do {
            parsed = try Self.parse(text: text, file: file, allowEmpty: true)
        } catch {
            var error = error
            error.sensitiveLines.formUnion(Self.passwordLines(text: text))
            throw error
        }
        var builder = ConfigBuilder(file: file, directory: (file as NSString).deletingLastPathComponent, environment: environment)
        let context = DecodingContext()
        var decoded: File?
        if var root = parsed.root {
            if let keys, let pairs = root.pairs {
                root = YAMLNode(.mapping(pairs.filter { keys.contains($0.name) }), mark: root.mark)
            }
            do {
                decoded = try NodeDecoder(node: root, context: context).decode(File.self)
            } catch {
                context.record(error, at: root.mark)
            }
        } else {
            decoded = empty
        }
        var diagnostics = parsed.diagnostics + context.diagnostics
        let built = decoded.flatMap { build(&builder, $0) }
        diagnostics += builder.checker.diagnostics
        guard diagnostics.isEmpty, let built else {
            let sensitiveLines = Self.passwordLines(text: text).union(parsed.root.map(sensitive) ?? [])
            throw Self.error(diagnostics, sensitiveLines: sensitiveLines)
        }
        return built
    }

    /// The settings used when no config file exists: every default of SPEC section 2, paths under
    /// `directory`.
    public func defaultConfig(directory: String) -> DaemonConfig {
        var builder = ConfigBuilder(file: nil, directory: Self.absolute(directory), environment: environment)
        // An empty ConfigFile has nothing to reject, so build always succeeds.
        return builder.build(ConfigFile())!
    }

    // MARK: sites

    /// Loads one site file with the config's defaults and plugins folder. The file and its folders must be
    /// trusted as code is (``Platform/CodeFile``): a site file runs commands and reads secrets.
    public func loadSite(at path: String, config: DaemonConfig) throws(ConfigError) -> SiteDefinition {
        let file = Self.absolute(path)
        do throws(UntrustedCodeError) {
            try CodeFile.check(file)
        } catch where error.problem.isSystemError {
            // A file that cannot be examined cannot be read either: the read below says why.
        } catch {
            throw ConfigError(ConfigDiagnostic(SourceMark(file: file, line: 1, column: 1), "site file refused: \(error)"))
        }
        return try loadSite(text: try Self.read(file), file: file, config: config)
    }

    /// Loads site text as if it were the file `file` (its stem is the default name).
    public func loadSite(text: String, file: String, config: DaemonConfig) throws(ConfigError) -> SiteDefinition {
        // A file that does not parse still has its literal credentials hidden from `check`'s excerpts.
        let textualSensitive = Self.credentialLines(text: text)
        let parsed: Parsed
        do {
            parsed = try Self.parse(text: text, file: file, allowEmpty: false)
        } catch {
            var error = error
            error.sensitiveLines.formUnion(textualSensitive)
            throw error
        }
        guard let root = parsed.root else { throw Self.error(parsed.diagnostics, sensitiveLines: textualSensitive) }
        let sensitive = Self.credentialLines(root).union(textualSensitive)
        let context = DecodingContext()
        var decoded: SiteFile?
        do {
            decoded = try NodeDecoder(node: root, context: context).decode(SiteFile.self)
        } catch {
            context.record(error, at: root.mark)
        }
        var diagnostics = parsed.diagnostics + context.diagnostics
        var passphraseVariable: String?
        if case .passphraseEnvironment(let name) = config.vault.key { passphraseVariable = name }
        var builder = SiteBuilder(
            file: file, rootMark: root.mark, defaults: config.defaults, pluginsDirectory: config.pluginsDirectory,
            stateDirectory: config.stateDirectory, passphraseVariable: passphraseVariable, environment: environment)
        let site = decoded.flatMap { builder.build($0) }
        diagnostics += builder.checker.diagnostics
        if site == nil && diagnostics.isEmpty {
            // Every path that rejects a site records why; this guards against a silent failure.
            diagnostics.append(ConfigDiagnostic(root.mark, "the site could not be built from this file"))
        }
        guard diagnostics.isEmpty, let site else { throw Self.error(diagnostics, sensitiveLines: sensitive) }
        return site
    }

    /// The site files of `directory`: `*.yaml` and `*.yml`, hidden files and editor backups left
    /// out, sorted by name.
    public func siteFiles(in directory: String) throws(ConfigError) -> [String] {
        let folder = Self.absolute(directory)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw ConfigError(ConfigDiagnostic(SourceMark(file: folder, line: 1, column: 1), "cannot list the sites folder (sites_dir): \(Self.reason(error))"))
        }
        return names.filter { name in
            !name.hasPrefix(".") && Self.siteFileExtensions.contains((name as NSString).pathExtension)
        }.sorted().map { (folder as NSString).appendingPathComponent($0) }
    }

    /// Loads every site of `config.sitesDirectory`. A broken file does not stop the others; two
    /// files naming the same site are both reported. Files are parsed and checked in parallel (one
    /// worker per core); results keep file-name order.
    public func loadSites(config: DaemonConfig) -> SiteLoadResult {
        var result = SiteLoadResult()
        let files: [String]
        do {
            files = try siteFiles(in: config.sitesDirectory)
        } catch {
            result.failures.append(error)
            return result
        }
        let outcomes = Locked([Result<SiteDefinition, ConfigError>?](repeating: nil, count: files.count))
        DispatchQueue.concurrentPerform(iterations: files.count) { index in
            let outcome: Result<SiteDefinition, ConfigError>
            do throws(ConfigError) {
                outcome = .success(try loadSite(at: files[index], config: config))
            } catch {
                outcome = .failure(error)
            }
            outcomes.withLock { $0[index] = outcome }
        }
        var owners: [String: String] = [:]
        var listeners: [(address: LoopbackListenAddress, site: String)] = []
        for (file, outcome) in zip(files, outcomes.withLock { $0 }) {
            switch outcome {
            case .success(let site):
                if let first = owners[site.name] {
                    result.failures.append(ConfigError(ConfigDiagnostic(
                        SourceMark(file: file, line: 1, column: 1),
                        "site name '\(site.name)' is already used by \(first)")))
                } else if let listen = site.egress.listen,
                    let other = listeners.first(where: { $0.address.clashes(with: listen) })
                {
                    result.failures.append(ConfigError(ConfigDiagnostic(
                        listen.mark ?? SourceMark(file: file, line: 1, column: 1),
                        "egress.listen: \(listen) is already the listener of site '\(other.site)'")))
                } else {
                    if let listen = site.egress.listen { listeners.append((listen, site.name)) }
                    owners[site.name] = file
                    result.sites.append(site)
                }
            case .failure(let error):
                result.failures.append(error)
            case nil:
                break
            }
        }
        return result
    }

    // MARK: locating config.yaml

    /// Whether the file at `path` exists and belongs to a user other than this process's (the link itself or
    /// the file it leads to).
    static func ownedByAnother(_ path: String) -> Bool {
        guard let link = try? Syscall.lstat(path) else { return false }
        let target = try? Syscall.stat(path)
        return link.ownerUID != Syscall.userID || (target.map { $0.ownerUID != Syscall.userID } ?? false)
    }

    /// `$XDG_CONFIG_HOME/sessionkeeper/config.yaml` (XDG_CONFIG_HOME defaulting to `~/.config`): the one place the
    /// default lookup finds from any folder without a variable set.
    public var userConfigPath: String? {
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { ($0 as NSString).appendingPathComponent(".config") }
        return configHome.map { ($0 as NSString).appendingPathComponent("sessionkeeper/config.yaml") }
    }

    /// Where `config.yaml` is (SPEC section 9): `explicit` (`--config`), then `$SESSIONKEEPER_CONFIG`,
    /// then `./config.yaml`, then `$XDG_CONFIG_HOME/sessionkeeper/config.yaml` (XDG_CONFIG_HOME
    /// defaulting to `~/.config`). An explicitly named file must exist; the fallbacks are taken
    /// when they exist.
    public func locateConfig(explicit: String?, currentDirectory: String = FileManager.default.currentDirectoryPath)
        throws(ConfigLocationError) -> String
    {
        let fileManager = FileManager.default
        func resolved(_ path: String) -> String {
            var expanded = path
            if path.hasPrefix("~/"), let home = environment["HOME"] { expanded = home + path.dropFirst() }
            if expanded.hasPrefix("/") { return Checker.normalize(expanded) }
            return Checker.normalize(currentDirectory + "/" + expanded)
        }
        if let explicit {
            let path = resolved(explicit)
            // lstat, not fileExists: a dangling link or a link loop is there, and reading it says what is wrong.
            guard Syscall.exists(path) else { throw ConfigLocationError(source: "--config", path: path, tried: []) }
            return path
        }
        if let variable = environment["SESSIONKEEPER_CONFIG"], !variable.isEmpty {
            let path = resolved(variable)
            guard Syscall.exists(path) else {
                throw ConfigLocationError(source: "$SESSIONKEEPER_CONFIG", path: path, tried: [])
            }
            return path
        }
        let local = resolved("config.yaml")
        var tried = [local]
        if let userDefault = userConfigPath { tried.append(userDefault) }
        // The current folder may be anyone's (/tmp, a shared checkout): a config.yaml there that another user
        // owns (the file, or a link to it) would choose the socket a client talks to, so it is passed over.
        let ignored = Self.ownedByAnother(local) ? [local] : []
        if let found = tried.first(where: { fileManager.fileExists(atPath: $0) && !ignored.contains($0) }) { return found }
        throw ConfigLocationError(source: nil, path: nil, tried: tried, ignored: ignored)
    }

    // MARK: parsing

    struct Parsed {
        var root: YAMLNode?
        var diagnostics: [ConfigDiagnostic]
    }

    static func parse(text: String, file: String, allowEmpty: Bool) throws(ConfigError) -> Parsed {
        let start = SourceMark(file: file, line: 1, column: 1)
        if text.utf8.count > maximumFileSize {
            throw ConfigError(ConfigDiagnostic(start, "the file is larger than \(BoundedRead.describe(bytes: maximumFileSize)), the most a config or site file may hold"))
        }
        if text.utf8.contains(0) {
            throw ConfigError(ConfigDiagnostic(start, "file contains a NUL byte; it is not a YAML text file"))
        }
        let parser = YAMLParser(text: text, file: file)
        let root = try parser.parseDocument()
        var diagnostics = parser.diagnostics
        guard let root, !root.isNull else {
            if allowEmpty { return Parsed(root: nil, diagnostics: diagnostics) }
            diagnostics.append(ConfigDiagnostic(start, "empty file; a site needs at least base_url and login"))
            return Parsed(root: nil, diagnostics: diagnostics)
        }
        guard root.pairs != nil else {
            diagnostics.append(ConfigDiagnostic(root.mark, "expected a mapping of keys to values at the top of the file, found \(root.kindDescription)"))
            return Parsed(root: nil, diagnostics: diagnostics)
        }
        return Parsed(root: root, diagnostics: diagnostics)
    }

    static func read(_ file: String) throws(ConfigError) -> String {
        let start = SourceMark(file: file, line: 1, column: 1)
        let bytes: [UInt8]
        do {
            // Bounded: `/dev/zero` or a runaway file must end in a message, not in memory growing without end.
            bytes = try BoundedRead.file(file, limit: maximumFileSize)
        } catch {
            throw ConfigError(ConfigDiagnostic(start, "cannot read the file: \(error.reason)"))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(ConfigDiagnostic(start, "the file is not UTF-8 text; save it as UTF-8"))
        }
        return text
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return Checker.normalize(path) }
        return Checker.normalize(FileManager.default.currentDirectoryPath + "/" + path)
    }

    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError { return "no such file" }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoPermissionError { return "permission denied" }
        return nsError.localizedDescription
    }

    static func error(_ diagnostics: [ConfigDiagnostic], sensitiveLines: Set<Int>) -> ConfigError {
        // "unknown key 'base_ulr'; did you mean 'base_url'?" already explains the missing base_url.
        let suggested = Set(diagnostics.compactMap { diagnostic -> String? in
            guard let range = diagnostic.message.range(of: "; did you mean '") else { return nil }
            return String(diagnostic.message[range.upperBound...].prefix { $0 != "'" })
        })
        let kept = diagnostics.filter { diagnostic in
            !suggested.contains { diagnostic.message.hasPrefix("missing key '\($0)'") }
        }
        var error = ConfigError(kept.sorted { ($0.mark.line, $0.mark.column) < ($1.mark.line, $1.mark.column) })
        error.sensitiveLines = sensitiveLines
        return error
    }

    /// The lines of a top-level `credentials:` block found in the text itself, for files whose YAML does not
    /// parse: from the `credentials:` line to the next line that starts in the first column.
    static func credentialLines(text: String) -> Set<Int> {
        var lines = Set<Int>()
        var inside = false
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let startsAtColumnOne = line.first.map { !$0.isWhitespace && $0 != "#" } ?? false
            if startsAtColumnOne { inside = line.hasPrefix("credentials:") }
            if inside { lines.insert(index + 1) }
        }
        return lines
    }

    /// Lines of config.yaml that may hold a password: a URL with a user and password (`store.postgres.url`
    /// written literally), which `check` must not echo.
    static func passwordLines(text: String) -> Set<Int> {
        var lines = Set<Int>()
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard let scheme = line.range(of: "://") else { continue }
            if line[scheme.upperBound...].contains("@") || line.contains("password=") { lines.insert(index + 1) }
        }
        return lines
    }

    /// The text of a config or site file, read as the loader reads it (size-bounded, UTF-8), for showing
    /// source lines under diagnostics; nil when it cannot be read.
    public static func sourceText(of file: String) -> String? {
        try? read(file)
    }

    /// Lines holding literal credential values, which `check` must not echo.
    static func credentialLines(_ root: YAMLNode) -> Set<Int> {
        root["credentials"].map(scalarLines) ?? []
    }

    /// Lines of config.yaml's `notify:`, which `check` must not echo: a webhook's URL often holds its secret
    /// (an ntfy topic, a chat service's hook), and headers hold tokens.
    static func notifyLines(_ root: YAMLNode) -> Set<Int> {
        root["notify"].map(scalarLines) ?? []
    }

    /// The lines of every scalar under `node`.
    static func scalarLines(_ node: YAMLNode) -> Set<Int> {
        var lines = Set<Int>()
        func collect(_ node: YAMLNode) {
            switch node.content {
            case .scalar(let text, _):
                let count = text.reduce(0) { $1 == "\n" ? $0 + 1 : $0 }
                for line in node.mark.line...(node.mark.line + count + 1) { lines.insert(line) }
            case .sequence(let items): items.forEach(collect)
            case .mapping(let pairs): pairs.forEach { collect($0.value) }
            }
        }
        collect(node)
        return lines
    }
}

/// The outcome of loading a whole `sites_dir`.
public struct SiteLoadResult: Sendable {
    /// Sites that loaded, in file-name order.
    public var sites: [SiteDefinition] = []
    /// One error per file that failed.
    public var failures: [ConfigError] = []

    public init(sites: [SiteDefinition] = [], failures: [ConfigError] = []) {
        self.sites = sites
        self.failures = failures
    }
}

/// No config file could be found where SPEC section 9 says to look.
public struct ConfigLocationError: Error, Sendable, CustomStringConvertible {
    /// `--config` or `$SESSIONKEEPER_CONFIG` when that named a missing file.
    public var source: String?
    /// The missing file, absolute.
    public var path: String?
    /// The fallbacks looked at, in order.
    public var tried: [String]
    /// Those passed over: a `./config.yaml` another user owns.
    public var ignored: [String] = []

    /// One line for the CLI.
    public var description: String {
        if let source, let path { return "\(source): no such file \(path)" }
        let passedOver = ignored.map { "\($0) belongs to another user and was ignored; " }.joined()
        return "no config file found (looked at \(tried.joined(separator: ", ")); \(passedOver)pass --config or set SESSIONKEEPER_CONFIG"
    }
}
