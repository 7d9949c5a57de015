import ArgumentParser
import DemoSite

/// The flags of `demo-site` (CONTRACTS.md section 3).
struct DemoSiteOptions: ParsableArguments {
    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "TCP port to listen on; 0 picks a free one (see --port-file).")
    var port = 8480

    @Option(help: ArgumentHelp("Write the bound port to this file once listening (removed on exit).", valueName: "path"))
    var portFile: String?

    @Option(help: "User name of the one account.")
    var user = "alice"

    @Option(
        help: ArgumentHelp(
            "Environment variable holding the password; when unset the password is \"\(DemoSite.Configuration.defaultPassword)\".",
            valueName: "name"
        )
    )
    var passwordEnv = "DEMO_PASSWORD"

    @Option(
        help: ArgumentHelp(
            "Environment variable holding the key GET /api/signed checks signatures with; when unset the key is \"\(DemoSite.Configuration.defaultSigningKey)\".",
            valueName: "name"
        )
    )
    var signingKeyEnv = "DEMO_SIGNING_KEY"

    @Option(help: ArgumentHelp("Seconds a session lives (the Max-Age of demo_session).", valueName: "seconds"))
    var sessionMaxAge = 3600

    @Flag(help: "Sliding sessions: GET /ping restarts the session's Max-Age and re-sends its cookie.")
    var sliding = false

    @Option(help: ArgumentHelp("Base32 TOTP secret; enables the second factor (RFC 6238, SHA-1, 6 digits, 30 s).", valueName: "base32"))
    var totpSecret: String?

    @Flag(help: "Accept each TOTP code only once (RFC 6238 5.2); off so a client may log in twice within 30 s.")
    var totpRejectReplay = false

    @Option(help: ArgumentHelp("TOTP steps either side of the current one still accepted; 0 allows no clock drift.", valueName: "steps"))
    var totpDrift = 1

    @Option(help: "Host name of the main site (told apart by the Host header).")
    var mainHost = "demo.test"

    @Option(help: "Host name of the single-sign-on site.")
    var ssoHost = "sso.demo.test"

    @Option(help: ArgumentHelp("Run the identity provider (sign-in, consent, codes for /oidc/start) on this address, such as 127.0.0.2.", valueName: "address"))
    var idpHost: String?

    @Option(help: "TCP port of the identity provider; 0 picks a free one.")
    var idpPort = 8481

    @Option(help: ArgumentHelp("Extra markup on the sign-in page, after the form (a large page for benchmarks).", valueName: "bytes"))
    var loginPagePadding = 0

    /// The configuration these flags describe, validated.
    func makeConfiguration(environment: [String: String]) throws(DemoSite.ConfigurationError) -> DemoSite.Configuration {
        let configuration = DemoSite.Configuration(
            host: host,
            port: port,
            user: user,
            password: environment[passwordEnv] ?? DemoSite.Configuration.defaultPassword,
            sessionMaxAge: sessionMaxAge,
            sliding: sliding,
            totpSecret: totpSecret,
            totpRejectReplay: totpRejectReplay,
            totpDrift: totpDrift,
            mainHost: mainHost,
            ssoHost: ssoHost,
            loginPagePadding: loginPagePadding,
            signingKey: environment[signingKeyEnv] ?? DemoSite.Configuration.defaultSigningKey,
            idpHost: idpHost,
            idpPort: idpPort
        )
        try configuration.validate()
        return configuration
    }
}
