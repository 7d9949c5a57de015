import CookieJar
import Foundation
import SiteConfig

/// A site's session read straight from the store, for a client when no daemon answers (SPEC section 9: `cookie`
/// falls back to the vault, saying that nothing keeps the cookies fresh).
public enum StoredSession {
    /// The note printed on standard error whenever cookies come from the vault instead of the daemon.
    public static func staleNote(socket: String) -> String {
        "sessionkeeper: note: no daemon answers on \(socket); these cookies come from the vault and nothing keeps "
            + "them fresh (start the daemon with 'sessionkeeper run')"
    }

    /// The record of `site` that `store` holds; a failure that says there is none and how to make one. Nil
    /// `store`: there is no vault yet.
    public static func load(site: SiteDefinition, from store: (any SessionStore)?) async throws(StoredSessionError) -> SessionRecord {
        let record: SessionRecord?
        do {
            record = try await store?.load(site: site.name)
        } catch {
            throw .store(error)
        }
        guard let record else { throw .noSession(site: site.name, hint: hint(site)) }
        return record
    }

    private static func hint(_ site: SiteDefinition) -> String {
        if case .manual = site.login { "sessionkeeper import \(site.name) FILE" } else { "sessionkeeper login \(site.name)" }
    }
}

/// Why no stored session could be read. Names the site, never a value.
public enum StoredSessionError: Error, Sendable, CustomStringConvertible {
    /// None is stored; `hint` is the command that stores one.
    case noSession(site: String, hint: String)
    /// The vault holds something that cannot be read as a session.
    case store(SessionStoreError)

    public var description: String {
        switch self {
        case let .noSession(site, hint):
            "no session of site '\(site)' is stored in the vault; start the daemon ('sessionkeeper run') or run '\(hint)'"
        case .store(let error): error.description
        }
    }
}

/// The cookies a client is handed, chosen by the jar's rules: with a URL exactly those a request to it
/// carries (RFC 6265 section 5.4: domain, path, Secure, expiry, in the header's order), without one every
/// cookie still live.
public enum SessionCookies {
    public static func select(_ cookies: [Cookie], url: URL?, now: Date) -> [Cookie] {
        let live = cookies.filter { !$0.isExpired(at: now) }
        guard let url else { return live }
        let storage = CookieStorage(acceptPolicy: .always, limits: CookieLimits(), clock: { now })
        storage.restore(live)
        return storage.cookies(for: url)
    }

    /// `cookies` as `format` prints them: the header value on one line (nothing when empty), any other
    /// format as the codec writes it (`playwright` with the session's localStorage, `origins`).
    public static func text(_ cookies: [Cookie], as format: CookieFormat, origins: [StorageOrigin] = []) -> String {
        let encoded = CookieCodec.encode(cookies, as: format, origins: origins)
        guard format == .header else { return encoded }
        return encoded.isEmpty ? "" : encoded + "\n"
    }
}
