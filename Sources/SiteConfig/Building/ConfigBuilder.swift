import Foundation

/// Turns a decoded ``ConfigFile`` into a ``DaemonConfig`` (SPEC section 2), filling defaults and
/// making paths absolute against the file's folder.
struct ConfigBuilder {
    static let defaultSitesDirectory = "sites"
    static let defaultPluginsDirectory = "plugins"
    static let defaultStateDirectory = ".state"
    static let socketFileName = "sessionkeeper.sock"
    static let keyFileName = "master.key"
    /// More parallel logins than this is a mistake, not a setting (each holds sockets and a process).
    static let maximumConcurrentLogins = 1024

    let file: String?
    let environment: [String: String]
    var checker: Checker

    init(file: String?, directory: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
        checker = Checker(file: file ?? (directory as NSString).appendingPathComponent("config.yaml"), environment: environment)
    }

    mutating func build(_ config: ConfigFile) -> DaemonConfig? {
        let sites = checker.nonEmptyPath(config.sitesDir, key: "sites_dir") ?? checker.path(Self.defaultSitesDirectory)
        let plugins = checker.nonEmptyPath(config.pluginsDir, key: "plugins_dir") ?? checker.path(Self.defaultPluginsDirectory)
        let state = buildStateDirectory(config.stateDir)

        let socket = buildSocket(config.socket, stateDirectory: state)

        var vault = VaultSettings(key: .file(path: (state as NSString).appendingPathComponent(Self.keyFileName)))
        if let key = config.vault?.value.key {
            if let source = buildKeySource(key) { vault.key = source }
        }

        let store = config.store.map { buildStore($0) } ?? .vaultFolder

        var scheduler = SchedulerSettings()
        if let file = config.scheduler {
            if let value = file.maxConcurrentLogins {
                if (1...Self.maximumConcurrentLogins).contains(value.value) {
                    scheduler.maxConcurrentLogins = value.value
                } else {
                    checker.error(value.mark, "scheduler.max_concurrent_logins: \(value.value) is outside 1...\(Self.maximumConcurrentLogins)")
                }
            }
            if let interval = checker.duration(file.perHostInterval, key: "scheduler.per_host_interval") {
                scheduler.perHostInterval = interval
            }
            if let jitter = file.jitter {
                if (0...1).contains(jitter.value) {
                    scheduler.jitter = jitter.value
                } else {
                    checker.error(jitter.mark, "scheduler.jitter: \(jitter.value.formatted(.number)) is outside 0...1 (a fraction of the delay)")
                }
            }
        }

        var defaults = SiteDefaults()
        if let file = config.defaults {
            if let http = file.http { defaults.http = HTTPBuilder.build(http, checker: &checker) }
            defaults.refresh = RefreshBuilder.build(file.refresh, over: RefreshPolicy(), checker: &checker)
        }

        var log = LogSettings()
        if let file = config.log {
            if let level = checker.choice(file.level, LogSettings.Level.self, key: "log.level") { log.level = level }
            if let format = checker.choice(file.format, LogSettings.Format.self, key: "log.format") { log.format = format }
        }

        let notify = buildNotify(config.notify)

        guard checker.diagnostics.isEmpty else { return nil }
        return DaemonConfig(
            file: file, sitesDirectory: sites, pluginsDirectory: plugins, stateDirectory: state, socket: socket,
            vault: vault, store: store, scheduler: scheduler, defaults: defaults, log: log, metrics: config.metrics?.value ?? true,
            notify: notify)
    }

    /// The state folder of `config.yaml`'s `state_dir` (made absolute), or the default one.
    mutating func buildStateDirectory(_ stateDir: Marked<String>?) -> String {
        checker.nonEmptyPath(stateDir, key: "state_dir") ?? checker.path(Self.defaultStateDirectory)
    }

    /// `socket:` checked, with its defaults.
    mutating func buildSocket(_ marked: Marked<ConfigFile.SocketFile>?, stateDirectory: String) -> SocketSettings {
        var socket = SocketSettings(path: defaultSocketPath(stateDirectory: stateDirectory))
        guard let file = marked?.value else { return socket }
        if let path = checker.nonEmptyPath(file.path, key: "socket.path") {
            // sockaddr_un.sun_path holds 108 bytes on Linux, the terminating NUL included.
            if path.utf8.count > 107, let mark = file.path?.mark {
                checker.error(mark, "socket.path: \(path) is longer than the 107 bytes a Unix socket path may have")
            }
            socket.path = path
        }
        if let mode = checker.mode(file.mode, key: "socket.mode") { socket.mode = mode }
        if let group = file.group {
            if group.value.isEmpty { checker.error(group.mark, "socket.group: empty group name") } else { socket.group = group.value }
        }
        if socket.mode & 0o070 != 0, socket.group == nil, let mark = file.mode?.mark {
            checker.error(mark, "socket.mode gives the group access but no socket.group is set")
        }
        socket.allowUIDs = (file.allowUIDs ?? []).map(\.value)
        socket.limits = buildSocketLimits(file)
        return socket
    }

    /// `socket.max_connections` and the caps beside it: each at least 1, a per-uid cap within its total.
    private mutating func buildSocketLimits(_ file: ConfigFile.SocketFile) -> SocketLimits {
        var limits = SocketLimits()
        func count(_ value: Marked<Int>?, key: String) -> Int? {
            guard let value else { return nil }
            guard (1...SocketLimits.connectionCeiling).contains(value.value) else {
                checker.error(value.mark, "socket.\(key): \(value.value) is outside 1...\(SocketLimits.connectionCeiling)")
                return nil
            }
            return value.value
        }
        if let value = count(file.maxConnections, key: "max_connections") { limits.maxConnections = value }
        if let value = count(file.maxConnectionsPerUID, key: "max_connections_per_uid") { limits.maxConnectionsPerUID = value }
        if let value = count(file.maxEventReaders, key: "max_event_readers") { limits.maxEventReaders = value }
        if let value = count(file.maxEventReadersPerUID, key: "max_event_readers_per_uid") { limits.maxEventReadersPerUID = value }
        if limits.maxConnectionsPerUID > limits.maxConnections, let mark = (file.maxConnectionsPerUID ?? file.maxConnections)?.mark {
            checker.error(mark, "socket.max_connections_per_uid (\(limits.maxConnectionsPerUID)) is above socket.max_connections (\(limits.maxConnections))")
        }
        if limits.maxEventReadersPerUID > limits.maxEventReaders, let mark = (file.maxEventReadersPerUID ?? file.maxEventReaders)?.mark {
            checker.error(mark, "socket.max_event_readers_per_uid (\(limits.maxEventReadersPerUID)) is above socket.max_event_readers (\(limits.maxEventReaders))")
        }
        if let duration = checker.positiveDuration(file.requestTimeout, key: "socket.request_timeout") { limits.requestTimeout = duration }
        if let duration = checker.positiveDuration(file.idleTimeout, key: "socket.idle_timeout") { limits.idleTimeout = duration }
        if let mebibytes = file.replayMemoryMiB {
            if (0...SocketLimits.replayMemoryCeilingMiB).contains(mebibytes.value) {
                limits.replayMemoryBytes = mebibytes.value << 20
            } else {
                checker.error(mebibytes.mark, "socket.replay_memory_mib: \(mebibytes.value) is outside 0...\(SocketLimits.replayMemoryCeilingMiB)")
            }
        }
        return limits
    }

    /// `$XDG_RUNTIME_DIR/sessionkeeper.sock` when set (and absolute), else inside the state folder.
    func defaultSocketPath(stateDirectory: String) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return (runtime as NSString).appendingPathComponent(Self.socketFileName)
        }
        return (stateDirectory as NSString).appendingPathComponent(Self.socketFileName)
    }

    /// `store:` checked: `{postgres: {url, lease}}`, or the vault folder when it names no backend.
    private mutating func buildStore(_ marked: Marked<ConfigFile.StoreFile>) -> StoreSettings {
        guard let postgres = marked.value.postgres else {
            checker.error(marked.mark, "store: give postgres: {url: ..., lease: 15s}, or leave store out for the vault folder")
            return .vaultFolder
        }
        var lease = PostgresStoreSettings.defaultLease
        if let value = postgres.value.lease, let duration = checker.duration(value, key: "store.postgres.lease") {
            let bounds = PostgresStoreSettings.minimumLease...PostgresStoreSettings.maximumLease
            if bounds.contains(duration) {
                lease = duration
            } else {
                checker.error(value.mark, "store.postgres.lease: '\(value.value)' is outside 3s...10m (a keeper renews its leases every third of it)")
            }
        }
        guard let url = postgres.value.url else {
            checker.error(postgres.mark, "store.postgres: missing key 'url' (a postgres:// URL, or {env: NAME} naming the variable that holds it)")
            return .vaultFolder
        }
        switch url.value {
        case let .literal(text):
            do {
                return .postgres(PostgresStoreSettings(url: .literal(try DatabaseURL(parsing: text.value)), lease: lease))
            } catch {
                checker.error(text.mark, "store.postgres.url: \(error.message)")
            }
        case let .source(source):
            guard let name = source.value.env else {
                checker.error(source.mark, "store.postgres.url: give a postgres:// URL or {env: NAME}")
                return .vaultFolder
            }
            guard Checker.isEnvironmentName(name.value) else {
                checker.error(name.mark, "store.postgres.url.env: '\(name.value)' is not an environment variable name")
                return .vaultFolder
            }
            return .postgres(PostgresStoreSettings(url: .environment(name.value), lease: lease))
        }
        return .vaultFolder
    }

    private mutating func buildKeySource(_ marked: Marked<ConfigFile.KeyFile>) -> VaultKeySource? {
        let key = marked.value
        let count = [key.file != nil, key.passphraseEnv != nil, key.passphraseFile != nil, key.passphraseCommand != nil,
            key.systemdCredential != nil].filter { $0 }.count
        guard count == 1 else {
            checker.error(
                marked.mark,
                "vault.key: give exactly one of file, passphrase_env, passphrase_file, passphrase_command, systemd_credential")
            return nil
        }
        if let path = checker.nonEmptyPath(key.file, key: "vault.key.file") { return .file(path: path) }
        if let name = key.passphraseEnv {
            guard Checker.isEnvironmentName(name.value) else {
                checker.error(name.mark, "vault.key.passphrase_env: '\(name.value)' is not an environment variable name")
                return nil
            }
            return .passphraseEnvironment(name.value)
        }
        if let path = checker.nonEmptyPath(key.passphraseFile, key: "vault.key.passphrase_file") { return .passphraseFile(path: path) }
        if let command = key.passphraseCommand {
            guard command.value.first?.isEmpty == false else {
                checker.error(command.mark, "vault.key.passphrase_command: give the program and its arguments as a list")
                return nil
            }
            return .passphraseCommand(command.value)
        }
        if let name = key.systemdCredential {
            guard !name.value.isEmpty, !name.value.contains("/") else {
                checker.error(name.mark, "vault.key.systemd_credential: '\(name.value)' is not a credential name")
                return nil
            }
            return .systemdCredential(name.value)
        }
        return nil
    }
}
