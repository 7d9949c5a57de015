/// `config.yaml` as written (SPEC section 2); ``ConfigBuilder`` checks it and fills defaults.
struct ConfigFile: Decodable {
    var sitesDir: Marked<String>?
    var pluginsDir: Marked<String>?
    var stateDir: Marked<String>?
    var socket: Marked<SocketFile>?
    var vault: Marked<VaultFile>?
    var store: Marked<StoreFile>?
    var scheduler: SchedulerFile?
    var defaults: DefaultsFile?
    var log: LogFile?
    var metrics: Marked<Bool>?
    var notify: Marked<[Marked<NotifierFile>]>?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case sitesDir = "sites_dir", pluginsDir = "plugins_dir", stateDir = "state_dir", socket, vault, store, scheduler
        case defaults, log, metrics, notify
    }

    /// The two keys a client command reads to reach the daemon (``ConfigurationLoader/loadSocketSettings(at:)``).
    struct SocketLookup: Decodable {
        var stateDir: Marked<String>?
        var socket: Marked<SocketFile>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case stateDir = "state_dir", socket
        }
    }

    struct SocketFile: Decodable {
        var path: Marked<String>?
        var mode: Marked<String>?
        var group: Marked<String>?
        var allowUIDs: [Marked<UInt32>]?
        var maxConnections: Marked<Int>?
        var maxConnectionsPerUID: Marked<Int>?
        var maxEventReaders: Marked<Int>?
        var maxEventReadersPerUID: Marked<Int>?
        var requestTimeout: Marked<String>?
        var idleTimeout: Marked<String>?
        var replayMemoryMiB: Marked<Int>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case path, mode, group, allowUIDs = "allow_uids"
            case maxConnections = "max_connections", maxConnectionsPerUID = "max_connections_per_uid"
            case maxEventReaders = "max_event_readers", maxEventReadersPerUID = "max_event_readers_per_uid"
            case requestTimeout = "request_timeout", idleTimeout = "idle_timeout"
            case replayMemoryMiB = "replay_memory_mib"
        }
    }

    struct VaultFile: Decodable {
        var key: Marked<KeyFile>?

        enum CodingKeys: String, CodingKey, CaseIterable { case key }
    }

    struct KeyFile: Decodable {
        var file: Marked<String>?
        var passphraseEnv: Marked<String>?
        var passphraseFile: Marked<String>?
        var passphraseCommand: Marked<[String]>?
        var systemdCredential: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case file, passphraseEnv = "passphrase_env", passphraseFile = "passphrase_file"
            case passphraseCommand = "passphrase_command", systemdCredential = "systemd_credential"
        }
    }

    /// `store:`: absent for the vault folder, `{postgres: {...}}` for a fleet's database.
    struct StoreFile: Decodable {
        var postgres: Marked<PostgresFile>?

        enum CodingKeys: String, CodingKey, CaseIterable { case postgres }
    }

    struct PostgresFile: Decodable {
        var url: Marked<URLFile>?
        var lease: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case url, lease }
    }

    /// `url: "postgres://..."` or `url: {env: NAME}`.
    enum URLFile: Decodable {
        case literal(Marked<String>)
        case source(Marked<URLSourceFile>)

        init(from decoder: any Decoder) throws {
            guard let decoder = decoder as? NodeDecoder else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
            }
            if decoder.node.scalarText != nil {
                self = .literal(try decoder.decode(Marked<String>.self))
            } else {
                self = .source(try decoder.decode(Marked<URLSourceFile>.self))
            }
        }
    }

    struct URLSourceFile: Decodable {
        var env: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case env }
    }

    struct SchedulerFile: Decodable {
        var maxConcurrentLogins: Marked<Int>?
        var perHostInterval: Marked<String>?
        var jitter: Marked<Double>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case maxConcurrentLogins = "max_concurrent_logins", perHostInterval = "per_host_interval", jitter
        }
    }

    struct DefaultsFile: Decodable {
        var http: SiteFile.HTTPFile?
        var refresh: SiteFile.RefreshFile?

        enum CodingKeys: String, CodingKey, CaseIterable { case http, refresh }
    }

    struct LogFile: Decodable {
        var level: Marked<String>?
        var format: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case level, format }
    }

    /// One entry of `notify:`: `webhook: URL` with its keys, or `command: [argv...]`.
    struct NotifierFile: Decodable {
        var webhook: Marked<String>?
        var command: Marked<[String]>?
        var format: Marked<String>?
        var headers: Marked<OrderedMap<HeaderValueFile>>?
        var events: Marked<[Marked<String>]>?
        var answerURL: Marked<String>?
        var timeout: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case webhook, command, format, headers, events, answerURL = "answer_url", timeout
        }
    }

    /// A header's value: a literal, or `{env: NAME}`.
    enum HeaderValueFile: Decodable {
        case literal(Marked<String>)
        case source(Marked<HeaderSourceFile>)

        init(from decoder: any Decoder) throws {
            guard let decoder = decoder as? NodeDecoder else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
            }
            if decoder.node.scalarText != nil {
                self = .literal(try decoder.decode(Marked<String>.self))
            } else {
                self = .source(try decoder.decode(Marked<HeaderSourceFile>.self))
            }
        }
    }

    struct HeaderSourceFile: Decodable {
        var env: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case env }
    }
}
