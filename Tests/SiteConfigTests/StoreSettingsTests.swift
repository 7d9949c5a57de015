import Foundation
import Testing
@testable import SiteConfig

/// `store:` in config.yaml and the database URL it names (SPEC section 11).
@Suite struct StoreSettingsTests {
    @Test func theVaultFolderIsTheDefault() throws {
        #expect(try loader.loadConfig(text: "sites_dir: s\n", file: "/etc/sk/config.yaml").store == .vaultFolder)
    }

    @Test func aDatabaseFromTheEnvironmentOrLiterally() throws {
        let fromEnvironment = try loader.loadConfig(
            text: "store:\n  postgres:\n    url: {env: SK_DATABASE_URL}\n    lease: 30s\n", file: "/etc/sk/config.yaml").store
        #expect(fromEnvironment == .postgres(PostgresStoreSettings(url: .environment("SK_DATABASE_URL"), lease: .seconds(30))))
        let literal = try loader.loadConfig(
            text: "store: {postgres: {url: \"postgres://sk:pw@db.example:6432/fleet?sslmode=verify-full\"}}\n",
            file: "/etc/sk/config.yaml").store
        guard case let .postgres(settings) = literal, case let .literal(url) = settings.url else {
            Issue.record("not a literal database URL: \(literal)")
            return
        }
        #expect(settings.lease == .seconds(15))
        #expect(settings.renewalPeriod == .seconds(5))
        #expect(url.user == "sk" && url.password == "pw" && url.host == "db.example" && url.port == 6432)
        #expect(url.database == "fleet" && url.tls == .verifyFull && url.socketPath == nil)
    }

    @Test func urlForms() throws {
        let socket = try DatabaseURL(parsing: "postgresql://keeper@/sk?host=/run/postgresql&port=5433")
        #expect(socket.socketPath == "/run/postgresql/.s.PGSQL.5433")
        #expect(socket.host == nil && socket.tls == .disable && socket.database == "sk")
        let bare = try DatabaseURL(parsing: "postgres://keeper@")
        #expect(bare.socketPath == "/var/run/postgresql/.s.PGSQL.5432")
        #expect(bare.database == "keeper")
        let escaped = try DatabaseURL(parsing: "postgres://us%40er:p%3Ass@[::1]:5000/d%20b")
        #expect(escaped.user == "us@er" && escaped.password == "p:ss" && escaped.host == "::1" && escaped.port == 5000)
        #expect(escaped.database == "d b" && escaped.tls == .prefer)
        #expect(throws: DatabaseURLError.self) { try DatabaseURL(parsing: "postgres://db.example/sk") }
        #expect(throws: DatabaseURLError.self) { try DatabaseURL(parsing: "postgres://sk@db.example:0/sk") }
        #expect(throws: DatabaseURLError.self) { try DatabaseURL(parsing: "postgres://sk@/sk?sslmode=verify-full") }
    }

    /// Unsaid, `sslmode` is verify-full for a database across the network (its certificate must prove the host)
    /// and prefer on this machine; a URL that says it keeps it.
    @Test func tlsIsVerifiedByDefaultForAHostOtherThanThisMachine() throws {
        for remote in ["db.example", "10.0.0.5", "[2001:db8::1]", "127.example.com", "localhost.example"] {
            #expect(try DatabaseURL(parsing: "postgres://sk@\(remote)/sk").tls == .verifyFull, "\(remote)")
        }
        for local in ["localhost", "LOCALHOST", "db.localhost", "127.0.0.1", "127.1.2.3", "[::1]"] {
            #expect(try DatabaseURL(parsing: "postgres://sk@\(local)/sk").tls == .prefer, "\(local)")
        }
        #expect(try DatabaseURL(parsing: "postgres://sk@db.example/sk?sslmode=prefer").tls == .prefer)
        #expect(try DatabaseURL(parsing: "postgres://sk@db.example/sk?sslmode=disable").tls == .disable)
        #expect(try DatabaseURL(parsing: "postgres://sk@/sk?host=/run/postgresql").tls == .disable, "a Unix socket carries no TLS")
    }

    @Test func noMessageOrDescriptionShowsThePassword() throws {
        let password = "Pa55-w0rd-zz"
        let url = try DatabaseURL(parsing: "postgres://sk:\(password)@db.example/sk")
        #expect(url.description == "postgres://sk:***@db.example:5432/sk?sslmode=verify-full")
        #expect(!"\(url)".contains(password) && !String(reflecting: url).contains(password))
        #expect(!"\(StoreSettings.postgres(PostgresStoreSettings(url: .literal(url))))".contains(password))
        do {
            _ = try DatabaseURL(parsing: "postgres://sk:\(password)@db.example:99999/sk")
            Issue.record("a bad port was accepted")
        } catch {
            #expect(!error.message.contains(password))
        }
        // config.yaml's line that holds it is masked when `check` echoes source lines.
        let text = "store:\n  postgres:\n    url: \"postgres://sk:\(password)@db.example/sk?bad=1\"\n"
        do {
            _ = try loader.loadConfig(text: text, file: "/etc/sk/config.yaml")
            Issue.record("an unknown URL parameter was accepted")
        } catch {
            #expect(error.sensitiveLines.contains(3))
            #expect(!error.description.contains(password))
        }
    }

    @Test func anEnvironmentURLIsCheckedWhenResolved() throws {
        let source = DatabaseURLSource.environment("SK_DB")
        #expect(throws: DatabaseURLError.self) { try source.resolve(environment: [:]) }
        #expect(try source.resolve(environment: ["SK_DB": "postgres://sk@db/x"]).host == "db")
        do {
            _ = try source.resolve(environment: ["SK_DB": "postgres://sk:secretpw@db:x/x"])
            Issue.record("a bad URL was accepted")
        } catch {
            #expect(error.message.hasPrefix("environment variable SK_DB:"))
            #expect(!error.message.contains("secretpw"))
        }
        #expect(source.description == "the URL in $SK_DB")
    }
}
