import CookieJar
import Foundation

/// Chromium's `cookies` table (`Cookies`, in the profile's `Network` folder since Chromium 96).
///
/// - `host_key`: `.example.com` for a domain cookie, `example.com` for a host-only one.
/// - `value` is empty and `encrypted_value` holds the value, prefixed `v10` or `v11` (``ChromiumCipher``).
/// - `expires_utc`, `creation_utc`, `last_access_utc`: microseconds since 1601-01-01 UTC; `expires_utc` 0 (or
///   `has_expires` 0) for a session cookie, which Chromium keeps here when it restores sessions.
/// - `samesite`: -1 unspecified, 0 None, 1 Lax, 2 Strict.
/// - `is_secure`, `is_httponly` (`secure`, `httponly` before Chromium 80).
/// - `top_frame_site_key`: set for a partitioned (CHIPS) cookie, one kept for a third-party context.
/// - `meta.version` 24 and later: the plaintext starts with the SHA-256 of `host_key` (``hostDigestVersion``).
enum ChromiumCookieTable {
    /// The `meta` table's `version` from which decrypted values start with the SHA-256 digest of their host
    /// (Chromium 130), binding each value to its domain.
    static let hostDigestVersion: Int64 = 24
    /// Columns 0 to 5 are required; 6 to 12 are read when the table has them (under either name).
    static let query = CookieTableQuery(
        table: "cookies", required: ["host_key", "name", "value", "encrypted_value", "path", "expires_utc"],
        optional: [
            (["is_secure", "secure"], "0"), (["is_httponly", "httponly"], "0"), (["samesite"], "-1"), (["has_expires"], "1"),
            (["creation_utc"], "NULL"), (["last_access_utc"], "NULL"), (["top_frame_site_key"], "''"),
        ])

    struct Reading: Sendable {
        var stored: StoredCookies
        /// Whether decrypted values carry the host digest.
        var valuesCarryHostDigest: Bool
    }

    static func read(_ database: SQLiteDatabase, site: SiteDomain) throws(SQLiteError) -> Result<Reading, BrowserCookieError> {
        let select: String
        switch try query.select(in: database) {
        case .success(let text): select = text
        case .failure(let failure): return .failure(failure)
        }
        var version: Int64 = 0
        if try database.tableNames().contains("meta") {
            version = try database.integer("SELECT value FROM meta WHERE key = 'version'") ?? 0
        }
        var stored = StoredCookies()
        try database.rows(select) { row in
            guard let (host, name) = stored.siteRow(row, site: site) else { return }
            guard let path = row.text(4) ?? (row.isNull(4) ? "/" : nil) else {
                stored.refused.append(.rejected(name: name, reason: "its path is not UTF-8 text"))
                return
            }
            guard (row.text(12) ?? "").isEmpty else {
                stored.refused.append(.rejected(name: name, reason: "it was set in a third-party context (a partitioned cookie), not for the site itself"))
                return
            }
            let encrypted = row.bytes(3)
            let value: StoredCookie.Value
            if encrypted.isEmpty {
                guard let plain = row.text(2) ?? (row.isNull(2) ? "" : nil) else {
                    stored.refused.append(.rejected(name: name, reason: "its value is not UTF-8 text"))
                    return
                }
                value = .plain(plain)
            } else {
                value = .encrypted(encrypted)
            }
            let expires = row.int64(5)
            stored.rows.append(StoredCookie(
                name: name, value: value, host: host, path: path,
                expires: expires > 0 && row.int64(9) != 0 ? BrowserTime.chromium(microseconds: expires) : nil,
                secure: row.int64(6) != 0, httpOnly: row.int64(7) != 0, sameSite: StoredCookie.sameSite(row.int64(8)),
                created: row.isNull(10) ? nil : BrowserTime.chromium(microseconds: row.int64(10)),
                lastAccess: row.isNull(11) ? nil : BrowserTime.chromium(microseconds: row.int64(11))))
        }
        return .success(Reading(stored: stored, valuesCarryHostDigest: version >= hostDigestVersion))
    }
}
