/// Where one named credential's value comes from (SPEC section 3, `credentials:`).
///
/// Values are resolved at login time by the Credentials module and never logged.
public enum CredentialSource: Sendable, Hashable {
    /// The value written in the site file (`username: alice`).
    case literal(String)
    /// An item of the encrypted store (`{secret: wiki/password}`), by name.
    case secret(String)
    /// An environment variable of the daemon (`{env: WIKI_PASSWORD}`), by name.
    case environment(String)
    /// A file's content, trailing newline trimmed (`{file: PATH}`); the path is absolute, resolved
    /// against the site file's folder, `~` expanded.
    case file(path: String)
    /// A command's standard output, trailing newline trimmed (`{command: [argv...]}`), run without
    /// a shell.
    case command([String])
    /// An RFC 6238 one-time code computed at use (`{totp: {secret: wiki/totp}}`).
    case totp(TOTPParameters)
}

/// RFC 6238 parameters of a `totp` credential.
public struct TOTPParameters: Sendable, Hashable {
    /// Hash function of the HMAC (RFC 6238 section 1.2 allows SHA-1, SHA-256 and SHA-512).
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case sha1, sha256, sha512
    }

    /// The encrypted store's item holding the shared secret (base32, as authenticator apps show it).
    public var secretName: String
    /// Code length, 6 to 8 digits (RFC 4226 section 5.3).
    public var digits: Int
    /// Time step X (RFC 6238 section 4.1), 30 seconds by default.
    public var period: Duration
    /// HMAC hash function (default SHA-1, what authenticator apps assume).
    public var algorithm: Algorithm

    /// RFC 4226's usual code length.
    public static let defaultDigits = 6
    /// RFC 6238 section 5.2's recommended time step.
    public static let defaultPeriod: Duration = .seconds(30)

    public init(
        secretName: String, digits: Int = TOTPParameters.defaultDigits,
        period: Duration = TOTPParameters.defaultPeriod, algorithm: Algorithm = .sha1
    ) {
        self.secretName = secretName
        self.digits = digits
        self.period = period
        self.algorithm = algorithm
    }
}

/// One entry of a site's `credentials:` mapping, in file order.
public struct CredentialEntry: Sendable, Hashable {
    /// The name templates use: `{{ credentials.NAME }}`.
    public var name: String
    /// Where the value comes from.
    public var source: CredentialSource
    /// Where the entry's key is written.
    public var mark: SourceMark?

    public init(name: String, source: CredentialSource, mark: SourceMark? = nil) {
        self.name = name
        self.source = source
        self.mark = mark
    }
}
