import Foundation
internal import PostgresNIO
import SiteConfig
import Vault

/// A failure of the fleet's store: what kind, and what happened in words safe to log. Never holds a
/// password, a cookie, a secret or a key: database errors are described from their code and the server's
/// message, never from the statement's parameters.
public struct PostgresStoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The database cannot be reached or used now (connection refused or lost, a timeout, the server
        /// shutting down or starting, a refused login): a keeper waits and retries.
        case unreachable
        /// The database refused a statement for another reason.
        case rejected
        /// The schema is newer than this SessionKeeper knows: a newer keeper upgraded the database.
        case schemaTooNew(found: Int, known: Int)
        /// A fenced write was refused: the site's lease is no longer held under the epoch it was won under.
        case staleEpoch(site: String, won: Int64, current: Int64?)
        /// The vault's keys or an item (wrong key, a tampered or foreign item, no keyring yet).
        case vault(VaultError.Reason)
        /// The URL or the TLS setup cannot be used.
        case configuration
        /// The operation needs ``PostgresStore/open(createIfMissing:seed:)`` to have succeeded.
        case notOpen
        /// The operation is not available on a database store.
        case unsupported
    }

    public var kind: Kind
    public var detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    init(_ error: VaultError) {
        self.init(.vault(error.reason), error.description)
    }

    public var description: String {
        switch kind {
        case .unreachable: "the store's database is unreachable: \(detail)"
        case let .schemaTooNew(found, known):
            "the store's database has schema version \(found), newer than this SessionKeeper knows (\(known)); "
                + "a newer SessionKeeper upgraded it: upgrade this one too"
        case let .staleEpoch(site, won, current):
            "site '\(site)': write refused for a stale lease epoch (won under \(won), the lease is now "
                + (current.map { "at epoch \($0)" } ?? "gone") + "): another keeper took the site over"
        default: detail
        }
    }

    /// This error as the vault's, for ``Vault/ItemStore`` callers.
    var vaultError: VaultError {
        switch kind {
        case let .vault(reason): VaultError(reason)
        case .unreachable: VaultError(.storeUnreachable(detail))
        default: VaultError(.storeFailed(description))
        }
    }

    /// Whether the error says the database is out of reach (as opposed to a refused statement).
    public var isUnreachable: Bool { kind == .unreachable }
}

/// The class of SQLSTATE codes and the codes that mean "the database cannot be used now" rather than
/// "this statement is wrong" (PostgreSQL's Appendix A).
enum DatabaseFailure {
    /// Turns anything postgres-nio or the connection pool threw into a store error; `place` says which
    /// database (never with its password).
    static func classify(_ error: any Error, doing what: String, place: String) -> PostgresStoreError {
        if let error = error as? PostgresStoreError { return error }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.beginError ?? error.commitError { return classify(inner, doing: what, place: place) }
        }
        if let error = error as? PSQLError {
            return classify(error, doing: what, place: place)
        }
        if error is CancellationError {
            return PostgresStoreError(.unreachable, "\(what) on \(place) was cancelled")
        }
        let text = String(describing: error)
        if text.contains("connectionCreationCircuitBreakerTripped") || text.contains("poolShutdown") || text.contains("requestCancelled") {
            return PostgresStoreError(.unreachable, "\(what): no connection to \(place) could be made")
        }
        return PostgresStoreError(.unreachable, "\(what) on \(place): \(text)")
    }

    private static func classify(_ error: PSQLError, doing what: String, place: String) -> PostgresStoreError {
        let code = error.code
        if code == .server, let info = error.serverInfo {
            let state = info[.sqlState] ?? "?????"
            let message = info[.message] ?? "no message"
            let unavailable = state.hasPrefix("08") || state.hasPrefix("28") || state.hasPrefix("53")
                || ["57P01", "57P02", "57P03", "3D000"].contains(state)
            return PostgresStoreError(unavailable ? .unreachable : .rejected, "\(what) on \(place): \(message) (SQLSTATE \(state))")
        }
        let reason: String
        switch code {
        case .connectionError:
            reason = "cannot connect" + (error.underlying.map { " (\(describe($0)))" } ?? "")
        case .serverClosedConnection, .uncleanShutdown:
            reason = "the server closed the connection"
        case .clientClosedConnection, .poolClosed:
            reason = "the connection was closed"
        case .sslUnsupported:
            reason = "the server does not support TLS, which sslmode requires"
        case .failedToAddSSLHandler:
            reason = "TLS could not be set up"
        case .authMechanismRequiresPassword:
            reason = "the server asks for a password and the URL gives none"
        case .unsupportedAuthMechanism:
            reason = "the server asks for an authentication method this client does not support"
        case .saslError:
            reason = "SCRAM authentication failed"
        default:
            reason = "\(code)"
        }
        return PostgresStoreError(.unreachable, "\(what) on \(place): \(reason)")
    }

    /// An underlying connection error in words, without anything the URL held beyond host and port.
    private static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        return text.count > 300 ? String(text.prefix(300)) + "…" : text
    }
}
