import PostgresStore
import SiteConfig
import SocketAPI
import Vault

/// Why the daemon's parts could not be put together, or why the daemon stopped; each keeps the error it came
/// from, so that the CLI can turn it into its exit code (bad keys and configuration exit 2, the rest 1). No case
/// carries a secret: the underlying errors name items and settings, never values.
public enum AssemblyError: Error, CustomStringConvertible {
    /// The vault could not be opened or created, or the state folder could not be locked (another daemon holds
    /// it): a `VaultError`, or a system error.
    case vault(any Error)
    /// `store.postgres.url` could not be resolved (its `{env: NAME}` unset or not a URL).
    case databaseURL(DatabaseURLError)
    /// The fleet's database could not be set up from its settings.
    case store(PostgresStoreError)
    /// libcurl could not be started.
    case httpClient(String)
    /// The socket cannot be served at its path (another process listens there, or it holds something else).
    case socketFile(SocketFileError)
    /// A service of the running daemon failed, and the daemon stopped with it.
    case stopped(any Error)
    /// `login` or `probe` with a fleet's database: a login outside the fleet's leases would run beside the keeper
    /// that holds the site.
    case loginOutsideLeases
    /// What the configured store does not do (`vault rotate` of a database, `store migrate` without one).
    case unsupported(String)

    /// Whether the fault is in the configuration or the keys (the CLI exits 2) rather than in an operation (1).
    public var isConfigurationProblem: Bool {
        switch self {
        case let .vault(error): (error as? VaultError).map { Self.isConfigurationProblem($0.reason) } ?? false
        case let .store(error):
            switch error.kind {
            case let .vault(reason): Self.isConfigurationProblem(reason)
            case .configuration, .schemaTooNew, .unsupported: true
            default: false
            }
        case .databaseURL, .loginOutsideLeases, .unsupported: true
        case .httpClient, .socketFile, .stopped: false
        }
    }

    /// A vault's fault that lies in the keys or the configuration.
    public static func isConfigurationProblem(_ reason: VaultError.Reason) -> Bool {
        switch reason {
        case .keySource, .wrongKey, .rekeyedElsewhere, .notInitialized, .alreadyInitialized, .invalidName: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .vault(error): "\(error)"
        case let .databaseURL(error): "store.postgres.url: \(error)"
        case let .store(error): error.description
        case let .httpClient(reason): "cannot start the HTTP client: \(reason)"
        case let .socketFile(error): error.description
        case let .stopped(error): "the daemon stopped: \(error)"
        case .loginOutsideLeases:
            "config.yaml names a fleet's database (store: postgres): `login` and `probe` would run outside the fleet's "
                + "leases, beside the keeper that holds the site; ask a running keeper instead (`sessionkeeper refresh SITE`: "
                + "the keeper holding the site's lease logs in), or store a session with `sessionkeeper import`"
        case let .unsupported(reason): reason
        }
    }
}
