import CookieJar
import Foundation
import Sessions
import SiteConfig
import Vault

/// A site's session read straight from the vault, for the client commands when no daemon answers
/// (SPEC section 9: `cookie` falls back to the vault, saying that nothing keeps the cookies fresh).
enum StoredSession {
    /// The note printed on standard error whenever cookies come from the vault instead of the daemon.
    static func staleNote(socket: String) -> String {
        "sessionkeeper: note: no daemon answers on \(socket); these cookies come from the vault and nothing keeps "
            + "them fresh (start the daemon with 'sessionkeeper run')"
    }

    /// The stored record of `site`, or a failure (exit 1) that says there is none and how to make one.
    static func load(site: SiteDefinition, config: DaemonConfig) async throws -> SessionRecord {
        let vault: Vault
        do {
            vault = try VaultAccess.open(stateDirectory: config.stateDirectory, key: MasterKeySource(config.vault.key), create: false)
        } catch let error as VaultError where error.reason == .notInitialized {
            throw CLIFailure.failed(noSession(site))
        } catch {
            throw CLIFailure(vaultError: error)
        }
        defer { vault.close() }
        let record: SessionRecord?
        do {
            record = try await VaultSessionStore(vault: vault).load(site: site.name)
        } catch {
            throw CLIFailure.failed(error.description)
        }
        guard let record else { throw CLIFailure.failed(noSession(site)) }
        return record
    }

    private static func noSession(_ site: SiteDefinition) -> String {
        let how = if case .manual = site.login { "sessionkeeper import \(site.name) FILE" } else { "sessionkeeper login \(site.name)" }
        return "no session of site '\(site.name)' is stored in the vault; start the daemon ('sessionkeeper run') or run '\(how)'"
    }
}

/// The cookies a client is handed, chosen by the jar's rules: with a URL exactly those a request to it
/// carries (RFC 6265 section 5.4: domain, path, Secure, expiry, in the header's order), without one every
/// cookie still live.
enum SessionCookies {
    static func select(_ cookies: [Cookie], url: URL?, now: Date) -> [Cookie] {
        let live = cookies.filter { !$0.isExpired(at: now) }
        guard let url else { return live }
        let storage = CookieStorage(acceptPolicy: .always, limits: CookieLimits(), clock: { now })
        storage.restore(live)
        return storage.cookies(for: url)
    }

    /// `cookies` as `format` prints them: the header value on one line (nothing when empty), any other
    /// format as the codec writes it (`playwright` with the session's localStorage, `origins`).
    static func text(_ cookies: [Cookie], as format: CookieFormat, origins: [StorageOrigin] = []) -> String {
        let encoded = CookieCodec.encode(cookies, as: format, origins: origins)
        guard format == .header else { return encoded }
        return encoded.isEmpty ? "" : encoded + "\n"
    }
}
