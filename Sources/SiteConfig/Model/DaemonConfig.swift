/// The daemon's own settings (`config.yaml`, SPEC section 2), with defaults applied and every path
/// made absolute against the file's folder.
public struct DaemonConfig: Sendable, Hashable {
    /// Absolute path of the file, or nil when the built-in defaults are used without a file.
    public var file: String?
    /// Folder of site files (`sites_dir`, default `sites`).
    public var sitesDirectory: String
    /// Folder of plugins (`plugins_dir`, default `plugins`).
    public var pluginsDirectory: String
    /// Folder of the store, lock file and by default the socket (`state_dir`, default `.state`).
    public var stateDirectory: String
    /// The API socket.
    public var socket: SocketSettings
    /// The encrypted store's key.
    public var vault: VaultSettings
    /// Where the encrypted items live: the vault folder, or a fleet's PostgreSQL database.
    public var store: StoreSettings
    /// Login concurrency and politeness.
    public var scheduler: SchedulerSettings
    /// `defaults:` — merged under every site (already applied to each loaded `SiteDefinition`).
    public var defaults: SiteDefaults
    /// Log level and format.
    public var log: LogSettings
    /// Serve `GET /metrics` on the socket (default true).
    public var metrics: Bool
    /// `notify:` — who is told when a site needs a person or recovers (SPEC section 12); none by default.
    public var notify: [NotifierSettings]

    public init(
        file: String?, sitesDirectory: String, pluginsDirectory: String, stateDirectory: String,
        socket: SocketSettings, vault: VaultSettings, store: StoreSettings = .vaultFolder,
        scheduler: SchedulerSettings = SchedulerSettings(),
        defaults: SiteDefaults = SiteDefaults(), log: LogSettings = LogSettings(), metrics: Bool = true,
        notify: [NotifierSettings] = []
    ) {
        self.file = file
        self.sitesDirectory = sitesDirectory
        self.pluginsDirectory = pluginsDirectory
        self.stateDirectory = stateDirectory
        self.socket = socket
        self.vault = vault
        self.store = store
        self.scheduler = scheduler
        self.defaults = defaults
        self.log = log
        self.metrics = metrics
        self.notify = notify
    }
}

/// The Unix socket of the API (`socket:`).
public struct SocketSettings: Sendable, Hashable {
    /// Absolute path. Default `$XDG_RUNTIME_DIR/sessionkeeper.sock` when that is set, else
    /// `STATE_DIR/sessionkeeper.sock`.
    public var path: String
    /// Permission bits (default 0o600; 0o660 together with `group`).
    public var mode: UInt16
    /// Group owning the socket file, by name.
    public var group: String?
    /// Uids allowed to read every site, besides the daemon's own uid and root.
    public var allowUIDs: [UInt32]
    /// What one peer may make the daemon hold (`socket.max_connections` and the keys beside it).
    public var limits: SocketLimits

    public init(path: String, mode: UInt16 = 0o600, group: String? = nil, allowUIDs: [UInt32] = [], limits: SocketLimits = SocketLimits()) {
        self.path = path
        self.mode = mode
        self.group = group
        self.allowUIDs = allowUIDs
        self.limits = limits
    }
}

/// The socket's caps on what its clients may hold (SPEC section 2, `socket:`). The defaults are far above
/// what a deployment's clients use, so only a runaway or hostile peer meets them; a deployment with many
/// clients under one uid raises them.
public struct SocketLimits: Sendable, Hashable {
    /// Connections open at once, all peers together; the next is answered 503 and closed. Each costs a file
    /// descriptor: the unit's `LimitNOFILE` must leave room for them.
    public var maxConnections = 1024
    /// Connections open at once from one uid, so one peer cannot take every place of ``maxConnections``.
    public var maxConnectionsPerUID = 128
    /// `GET /v1/events` streams open at once, all peers together; the next is answered 503.
    public var maxEventReaders = 256
    /// `GET /v1/events` streams open at once from one uid.
    public var maxEventReadersPerUID = 16
    /// A request's head and body must arrive within this of its first byte, else 408 and the connection is
    /// closed: a trickled request holds a connection this long at most.
    public var requestTimeout: Duration = .seconds(10)
    /// A connection with no request in progress for this long is closed.
    public var idleTimeout: Duration = .seconds(60)
    /// The memory the egress route may hold in request bodies kept to send again after a login, all connections
    /// together (SPEC section 10, `socket.replay_memory_mib`, in MiB); past it a body streams without being kept.
    public var replayMemoryBytes = 32 << 20

    /// The most `replay_memory_mib` a deployment may give: 64 GiB.
    public static let replayMemoryCeilingMiB = 65536

    /// The most connections a deployment may allow: far beyond a daemon's descriptors, a sign of a typo.
    public static let connectionCeiling = 1_000_000

    public init() {}
}

/// Where the vault's master key comes from (`vault.key:`).
public enum VaultKeySource: Sendable, Hashable {
    /// `{file: PATH}` — 32 random bytes, created 0600 on first run (absolute path).
    case file(path: String)
    /// `{passphrase_env: NAME}` — scrypt-derived key from this environment variable.
    case passphraseEnvironment(String)
    /// `{passphrase_file: PATH}` — passphrase read from a file (absolute path), trailing newline trimmed.
    case passphraseFile(path: String)
    /// `{passphrase_command: [argv...]}` — passphrase printed by a command (no shell).
    case passphraseCommand([String])
    /// `{systemd_credential: NAME}` — `$CREDENTIALS_DIRECTORY/NAME` (systemd `LoadCredential=`).
    case systemdCredential(String)
}

/// `vault:` settings.
public struct VaultSettings: Sendable, Hashable {
    /// Default: `{file: STATE_DIR/master.key}`.
    public var key: VaultKeySource

    public init(key: VaultKeySource) {
        self.key = key
    }
}

/// `scheduler:` settings.
public struct SchedulerSettings: Sendable, Hashable {
    /// At most this many logins run at once (default 8).
    public var maxConcurrentLogins: Int
    /// Politeness: minimum gap between two logins to one host (default 1s).
    public var perHostInterval: Duration
    /// Fraction (0...1) of random spread applied to scheduled times (default 0.1).
    public var jitter: Double

    public init(maxConcurrentLogins: Int = 8, perHostInterval: Duration = .seconds(1), jitter: Double = 0.1) {
        self.maxConcurrentLogins = maxConcurrentLogins
        self.perHostInterval = perHostInterval
        self.jitter = jitter
    }
}

/// `defaults:` — site keys applied under every site (`http` and `refresh`).
public struct SiteDefaults: Sendable, Hashable {
    /// `defaults.http`.
    public var http: HTTPSettings
    /// `defaults.refresh` over the built-in defaults.
    public var refresh: RefreshPolicy

    public init(http: HTTPSettings = HTTPSettings(), refresh: RefreshPolicy = RefreshPolicy()) {
        self.http = http
        self.refresh = refresh
    }
}

/// `log:` settings.
public struct LogSettings: Sendable, Hashable {
    /// swift-log's levels, by their lower-case names.
    public enum Level: String, Sendable, Hashable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    /// Log line format.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        case text, json
    }

    /// Least severe level logged (default info).
    public var level: Level
    /// Text lines or JSON objects (default text).
    public var format: Format

    public init(level: Level = .info, format: Format = .text) {
        self.level = level
        self.format = format
    }
}
