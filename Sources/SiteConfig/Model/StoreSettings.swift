import Foundation

/// Where the vault's items live (`store:` in config.yaml, SPEC section 11).
public enum StoreSettings: Sendable, Hashable {
    /// The vault folder under `state_dir` (the default): one keeper per state folder.
    case vaultFolder
    /// A PostgreSQL database shared by a fleet of keepers.
    case postgres(PostgresStoreSettings)
}

/// `store.postgres:`.
public struct PostgresStoreSettings: Sendable, Hashable {
    /// The lease when config gives none.
    public static let defaultLease: Duration = .seconds(15)
    /// The shortest lease accepted: its renewal period (a third) must leave a round trip to the database
    /// and a pause of the process room to happen without losing every lease.
    public static let minimumLease: Duration = .seconds(3)
    /// The longest lease accepted: a dead keeper's sites wait this long for another keeper.
    public static let maximumLease: Duration = .seconds(600)

    /// Where the database is.
    public var url: DatabaseURLSource
    /// How long a site's lease lasts on the database's clock without renewal (`lease:`, default 15 s).
    public var lease: Duration

    public init(url: DatabaseURLSource, lease: Duration = PostgresStoreSettings.defaultLease) {
        self.url = url
        self.lease = lease
    }

    /// How often a keeper renews its leases: a third of the lease, so two renewals may fail before it ends.
    public var renewalPeriod: Duration { lease / 3 }
}

/// `url:` as written: the URL itself, or the environment variable that holds it (`{env: NAME}`), which
/// keeps a password out of config.yaml. Its description never shows a password.
public enum DatabaseURLSource: Sendable, Hashable, CustomStringConvertible {
    case literal(DatabaseURL)
    case environment(String)

    /// The URL, read from `environment` for `{env: NAME}`.
    public func resolve(environment: [String: String]) throws(DatabaseURLError) -> DatabaseURL {
        switch self {
        case let .literal(url):
            return url
        case let .environment(name):
            guard let text = environment[name], !text.isEmpty else {
                throw DatabaseURLError(message: "environment variable \(name) (store.postgres.url) is not set or empty")
            }
            do {
                return try DatabaseURL(parsing: text)
            } catch {
                throw DatabaseURLError(message: "environment variable \(name): \(error.message)")
            }
        }
    }

    public var description: String {
        switch self {
        case let .literal(url): url.description
        case let .environment(name): "the URL in $\(name)"
        }
    }
}

/// Why a database URL cannot be used. Never holds the URL's password.
public struct DatabaseURLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// A PostgreSQL connection URL in libpq's form, `postgres://USER:PASSWORD@HOST:PORT/DATABASE?PARAMS`
/// (`postgresql://` too). A Unix socket is named by its folder: `postgres://USER@/DATABASE?host=/run/postgresql`
/// (the socket is `FOLDER/.s.PGSQL.PORT`, as libpq finds it). Parameters: `sslmode` (disable, prefer,
/// require, verify-full; default verify-full for a host other than this machine's loopback names, prefer for
/// localhost, 127.0.0.0/8 and ::1, none over a Unix socket), `sslrootcert` (a PEM file of trusted roots), `host`, `port`,
/// `application_name`, `connect_timeout` (seconds).
///
/// Its description shows the password as `***`; nothing else here ever shows it.
public struct DatabaseURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// libpq's `sslmode` values this client implements.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, without verifying its certificate.
        case prefer
        /// TLS always, without verifying the certificate.
        case require
        /// TLS always, the certificate verified against the trusted roots and the host name.
        case verifyFull = "verify-full"
    }

    /// The folder libpq looks in for the socket when a URL names no host (Debian's).
    public static let defaultSocketDirectory = "/var/run/postgresql"
    public static let defaultPort = 5432

    public var user: String
    public var password: String?
    /// A host name or address; nil for a Unix socket.
    public var host: String?
    public var port: Int
    /// The folder of the Unix socket when ``host`` is nil.
    public var socketDirectory: String?
    public var database: String
    public var tls: TLSMode
    /// A PEM file of the roots to trust (`sslrootcert`); the system's roots when nil.
    public var rootCertificateFile: String?
    public var applicationName: String
    public var connectTimeout: Duration

    /// The socket file when the URL names a Unix socket.
    public var socketPath: String? {
        socketDirectory.map { "\($0)/.s.PGSQL.\(port)" }
    }

    /// Parses `text`; an error says which part is wrong and never repeats the password.
    public init(parsing text: String) throws(DatabaseURLError) {
        func fail(_ message: String) -> DatabaseURLError { DatabaseURLError(message: message) }
        let schemes = ["postgres://", "postgresql://"]
        guard let scheme = schemes.first(where: { text.lowercased().hasPrefix($0) }) else {
            throw fail("not a PostgreSQL URL: it starts with postgres:// or postgresql://")
        }
        var rest = Substring(text.dropFirst(scheme.count))
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var hostPart = rest
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            hostPart = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decoded(userInfo[..<colon], what: "user name")
                password = try Self.decoded(userInfo[userInfo.index(after: colon)...], what: "password")
            } else {
                user = try Self.decoded(userInfo, what: "user name")
            }
        }
        var host: String?
        var port: Int?
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw fail("the IPv6 address in brackets has no ']'") }
            host = String(hostPart[hostPart.index(after: hostPart.startIndex)..<close])
            let after = hostPart[hostPart.index(after: close)...]
            if after.hasPrefix(":") { port = try Self.port(after.dropFirst()) } else if !after.isEmpty { throw fail("unexpected text after the IPv6 address") }
        } else if let colon = hostPart.lastIndex(of: ":") {
            host = try Self.decoded(hostPart[..<colon], what: "host")
            port = try Self.port(hostPart[hostPart.index(after: colon)...])
        } else if !hostPart.isEmpty {
            host = try Self.decoded(hostPart, what: "host")
        }
        if host?.isEmpty == true { host = nil }
        var tls: TLSMode?
        var rootCertificate: String?
        var applicationName = "sessionkeeper"
        var connectTimeout: Duration = .seconds(10)
        var socketDirectory: String?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = try Self.decoded(parts.count > 1 ? parts[1] : "", what: "parameter \(name)")
            switch name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw fail("sslmode '\(value)' is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                tls = mode
            case "sslrootcert":
                guard value.hasPrefix("/") else { throw fail("sslrootcert must be an absolute path") }
                rootCertificate = value
            case "host":
                if value.hasPrefix("/") { socketDirectory = value } else if !value.isEmpty { host = value }
            case "port":
                port = try Self.port(Substring(value))
            case "user":
                user = value
            case "password":
                password = value
            case "dbname":
                path = Substring(value)
            case "application_name":
                applicationName = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds > 0, seconds <= 3600 else {
                    throw fail("connect_timeout '\(value)' is not a number of seconds (1 to 3600)")
                }
                connectTimeout = .seconds(seconds)
            default:
                throw fail(
                    "unknown parameter '\(name)' (known: sslmode, sslrootcert, host, port, user, password, dbname, "
                        + "application_name, connect_timeout)")
            }
        }
        guard let user, !user.isEmpty else { throw fail("the URL names no user (postgres://USER@HOST/DATABASE)") }
        if host == nil, socketDirectory == nil { socketDirectory = Self.defaultSocketDirectory }
        if socketDirectory != nil, host != nil { socketDirectory = nil }
        let database = try Self.decoded(path, what: "database name")
        if socketDirectory != nil, let tls, tls == .verifyFull || tls == .require {
            throw fail("sslmode \(tls.rawValue) needs a host: a Unix socket carries no TLS")
        }
        self.user = user
        self.password = password
        self.host = host
        self.port = port ?? Self.defaultPort
        self.socketDirectory = socketDirectory
        self.database = database.isEmpty ? user : database
        // Unsaid, a database across the network is reached as libpq's verify-full would: a certificate that
        // proves the host, so no one on the path reads the items or the leases, nor gives old rows back. On
        // this machine (the loopback), TLS when offered, as libpq's default.
        self.tls = socketDirectory == nil ? tls ?? (host.map(Self.isLoopback) == true ? .prefer : .verifyFull) : .disable
        self.rootCertificateFile = rootCertificate
        self.applicationName = applicationName
        self.connectTimeout = connectTimeout
    }

    /// `localhost` (and names below it, RFC 6761), 127.0.0.0/8 and `::1`: a host on this machine.
    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased()
        if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The URL with the password as `***`: safe in a log line or an error.
    public var description: String {
        var text = "postgres://" + Self.encoded(user)
        if password != nil { text += ":***" }
        text += "@"
        if let host { text += host.contains(":") ? "[\(host)]:\(port)" : "\(Self.encoded(host)):\(port)" }
        text += "/" + Self.encoded(database)
        var parameters: [String] = []
        if let socketDirectory { parameters.append("host=\(socketDirectory)") }
        if socketDirectory == nil { parameters.append("sslmode=\(tls.rawValue)") }
        return parameters.isEmpty ? text : text + "?" + parameters.joined(separator: "&")
    }

    public var debugDescription: String { description }

    /// Where the database is, for messages: `database sk on db.example:5432` (no user, no password).
    public var place: String {
        if let host { return "database \(database) on \(host):\(port)" }
        return "database \(database) on \(socketPath ?? "a Unix socket")"
    }

    private static func port(_ text: Substring) throws(DatabaseURLError) -> Int {
        guard let port = Int(text), (1...65535).contains(port) else {
            throw DatabaseURLError(message: "port '\(text)' is not a number within 1...65535")
        }
        return port
    }

    private static func decoded(_ text: Substring, what: String) throws(DatabaseURLError) -> String {
        guard let value = String(text).removingPercentEncoding else {
            throw DatabaseURLError(message: "the \(what) has a malformed %-escape")
        }
        return value
    }

    private static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/"))) ?? text
    }
}
