import Foundation

extension DemoSite {
    /// Everything the demo site needs to run; the `demo-site` flags map one to one onto these fields.
    ///
    /// Its `description` and mirror mask the password, the TOTP secret and the signing key, so printing or dumping a
    /// configuration never shows them.
    public struct Configuration: Sendable {
        /// Address the server binds to (`--host`).
        public var host: String
        /// TCP port to listen on; 0 lets the system choose (`--port`).
        public var port: Int
        /// The one account's user name (`--user`).
        public var user: String
        /// The account's password (read from the environment variable named by `--password-env`).
        public var password: String
        /// Seconds a session lives; the `Max-Age` of `demo_session` (`--session-max-age`).
        public var sessionMaxAge: Int
        /// When true, `GET /ping` extends the session and re-issues its cookie (`--sliding`).
        public var sliding: Bool
        /// Base32 TOTP secret; when set, password logins need a second factor (`--totp-secret`).
        public var totpSecret: String?
        /// When true, a TOTP code (its time step, or an earlier one) is accepted only once, as RFC 6238 5.2
        /// asks of verifiers (`--totp-reject-replay`). Off by default so clients may log in twice within 30 s.
        public var totpRejectReplay: Bool
        /// Time steps either side of the current one whose TOTP code is still accepted (`--totp-drift`): 1 as RFC 6238
        /// 5.2 recommends, 0 for a strict verifier that takes only the current step's code.
        public var totpDrift: Int
        /// Host name of the main site, as the `Host` header carries it (`--main-host`).
        public var mainHost: String
        /// Host name of the single-sign-on site (`--sso-host`).
        public var ssoHost: String
        /// Bytes of extra markup on the sign-in page, after the form (`--login-page-padding`): a large page
        /// for benchmarks of parsing under load. 0 keeps the page small.
        public var loginPagePadding: Int
        /// The key `GET /api/signed` checks request signatures with (read from the environment variable
        /// named by `--signing-key-env`).
        public var signingKey: String
        /// Where the identity provider listens (`--idp-host`, an address such as 127.0.0.2: another host than the
        /// app's, so that each keeps its own cookies); nil runs none.
        public var idpHost: String?
        /// The identity provider's port (`--idp-port`); 0 lets the system choose.
        public var idpPort: Int

        /// The largest `--login-page-padding`: 64 MiB.
        public static let maxLoginPagePadding = 64 * 1024 * 1024

        /// The password used when `--password-env`'s variable is unset.
        public static let defaultPassword = "wonderland"

        /// The signing key used when `--signing-key-env`'s variable is unset.
        public static let defaultSigningKey = "demo-signing-key"

        /// Creates a configuration; every default is the `demo-site` flag's default.
        public init(
            host: String = "127.0.0.1",
            port: Int = 8480,
            user: String = "alice",
            password: String = Configuration.defaultPassword,
            sessionMaxAge: Int = 3600,
            sliding: Bool = false,
            totpSecret: String? = nil,
            totpRejectReplay: Bool = false,
            totpDrift: Int = 1,
            mainHost: String = "demo.test",
            ssoHost: String = "sso.demo.test",
            loginPagePadding: Int = 0,
            signingKey: String = Configuration.defaultSigningKey,
            idpHost: String? = nil,
            idpPort: Int = 0
        ) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
            self.sessionMaxAge = sessionMaxAge
            self.sliding = sliding
            self.totpSecret = totpSecret
            self.totpRejectReplay = totpRejectReplay
            self.totpDrift = totpDrift
            self.mainHost = mainHost
            self.ssoHost = ssoHost
            self.loginPagePadding = loginPagePadding
            self.signingKey = signingKey
            self.idpHost = idpHost
            self.idpPort = idpPort
        }

        /// Checks every field and decodes the TOTP secret.
        /// - Returns: the TOTP secret's bytes, or nil when the second factor is off.
        /// - Throws: ``ConfigurationError`` naming the field (by its flag) and what is wrong with it.
        @discardableResult
        public func validate() throws(ConfigurationError) -> [UInt8]? {
            guard (0...65_535).contains(port) else { throw .invalid(field: "--port", reason: "\(port) is not a TCP port (0...65535)") }
            guard (0...65_535).contains(idpPort) else { throw .invalid(field: "--idp-port", reason: "\(idpPort) is not a TCP port (0...65535)") }
            if let idpHost {
                guard !idpHost.isEmpty, idpHost.lowercased() != host.lowercased() else {
                    throw .invalid(field: "--idp-host", reason: "give an address other than --host ('\(host)'), such as 127.0.0.2")
                }
            }
            guard !host.isEmpty else { throw .invalid(field: "--host", reason: "the bind address is empty") }
            guard !user.isEmpty, user.allSatisfy({ !$0.isWhitespace && !$0.isNewline }) else {
                throw .invalid(field: "--user", reason: "the user name must be non-empty and contain no spaces")
            }
            guard !password.isEmpty else { throw .invalid(field: "--password-env", reason: "the password is empty") }
            guard !signingKey.isEmpty else { throw .invalid(field: "--signing-key-env", reason: "the signing key is empty") }
            // RFC 6265 5.2.2: Max-Age is whole seconds; a non-positive one would expire the cookie at once.
            guard sessionMaxAge > 0 else {
                throw .invalid(field: "--session-max-age", reason: "\(sessionMaxAge) must be a positive number of seconds")
            }
            for (field, name) in [("--main-host", mainHost), ("--sso-host", ssoHost)] {
                guard HostName.isValid(name) else {
                    throw .invalid(field: field, reason: "'\(name)' is not a host name (letters, digits, '-' and '.')")
                }
            }
            guard mainHost.lowercased() != ssoHost.lowercased() else {
                throw .invalid(field: "--sso-host", reason: "must differ from --main-host ('\(mainHost)')")
            }
            guard (0...Self.maxLoginPagePadding).contains(loginPagePadding) else {
                throw .invalid(field: "--login-page-padding", reason: "\(loginPagePadding) is not from 0 to \(Self.maxLoginPagePadding) bytes")
            }
            guard (0...2).contains(totpDrift) else { throw .invalid(field: "--totp-drift", reason: "\(totpDrift) is not from 0 to 2 steps") }
            guard let totpSecret else { return nil }
            let secret: [UInt8]
            do {
                secret = try Base32.decode(totpSecret)
            } catch {
                throw .invalid(field: "--totp-secret", reason: "not base32 (RFC 4648): \(error)")
            }
            guard secret.count >= TOTPVerifier.minimumSecretBytes else {
                throw .invalid(
                    field: "--totp-secret",
                    reason: "decodes to \(secret.count) bytes; at least \(TOTPVerifier.minimumSecretBytes) are needed"
                )
            }
            return secret
        }
    }

    /// A configuration field that cannot be used; the message names the flag and never holds a secret.
    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        /// `field` is the `demo-site` flag the field comes from.
        case invalid(field: String, reason: String)

        public var description: String {
            switch self {
            case .invalid(let field, let reason): "demo-site configuration: \(field): \(reason)"
            }
        }
    }
}

extension DemoSite.Configuration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields with the password, the TOTP secret and the signing key masked.
    public var description: String {
        "Configuration(host: \(host), port: \(port), user: \(user), password: <redacted>, "
            + "sessionMaxAge: \(sessionMaxAge), sliding: \(sliding), totpSecret: \(totpSecret == nil ? "none" : "<redacted>"), "
            + "totpRejectReplay: \(totpRejectReplay), totpDrift: \(totpDrift), mainHost: \(mainHost), ssoHost: \(ssoHost), "
            + "loginPagePadding: \(loginPagePadding), signingKey: <redacted>, idpHost: \(idpHost ?? "none"), idpPort: \(idpPort))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "host": host, "port": port, "user": user, "password": "<redacted>", "sessionMaxAge": sessionMaxAge,
                "sliding": sliding, "totpSecret": totpSecret == nil ? "none" : "<redacted>",
                "totpRejectReplay": totpRejectReplay, "totpDrift": totpDrift, "mainHost": mainHost, "ssoHost": ssoHost,
                "loginPagePadding": loginPagePadding, "signingKey": "<redacted>", "idpHost": idpHost ?? "none", "idpPort": idpPort,
            ],
            displayStyle: .struct
        )
    }
}

/// Host names as the `Host` header carries them.
enum HostName {
    /// RFC 1123 2.1 labels: letters, digits and hyphens, separated by dots.
    static func isValid(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") }
        }
    }

    /// Splits a `Host` header value into a lower-case name and an optional port ("[::1]:80" too).
    static func split(_ header: String) -> (name: String, port: Int?) {
        let value = header.trimmingCharacters(in: .whitespaces).lowercased()
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            let name = String(value[value.index(after: value.startIndex)..<close])
            let rest = value[value.index(after: close)...]
            return (name, rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil)
        }
        if let colon = value.lastIndex(of: ":"), value.firstIndex(of: ":") == colon {
            return (String(value[..<colon]), Int(value[value.index(after: colon)...]))
        }
        return (value, nil)
    }
}
