import PostgresStore
import SiteConfig
import SocketAPI

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

    public var description: String {
        switch self {
        case let .vault(error): "\(error)"
        case let .databaseURL(error): "store.postgres.url: \(error)"
        case let .store(error): error.description
        case let .httpClient(reason): "cannot start the HTTP client: \(reason)"
        case let .socketFile(error): error.description
        case let .stopped(error): "the daemon stopped: \(error)"
        }
    }
}
