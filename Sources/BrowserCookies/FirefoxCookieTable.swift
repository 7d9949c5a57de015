import CookieJar
import Foundation

/// Firefox's `moz_cookies` table (`cookies.sqlite`).
///
/// - `host`: `.example.com` for a domain cookie, `example.com` for a host-only one.
/// - `expiry`: seconds since 1970, or milliseconds from schema version 16 on (Firefox 142; `PRAGMA
///   user_version`). Firefox keeps session cookies out of this file (in its session store), so every row has
///   one; a row with 0 is read as a session cookie.
/// - `creationTime`, `lastAccessed`: microseconds since 1970.
/// - `sameSite`: 0 None, 1 Lax, 2 Strict, 256 unset (newer versions).
/// - `originAttributes`: empty for the ordinary cookies of a site; a container tab's
///   (`^userContextId=1`) or a third-party context's (`^partitionKey=…`) are not the site's own session.
enum FirefoxCookieTable {
    /// From this schema version on, `expiry` is in milliseconds.
    static let millisecondExpirySchema: Int64 = 16
    /// Columns 0 to 4 are required; 5 to 10 are read when the table has them.
    static let query = CookieTableQuery(
        table: "moz_cookies", required: ["host", "name", "value", "path", "expiry"],
        optional: [
            (["isSecure"], "0"), (["isHttpOnly"], "0"), (["sameSite"], "256"), (["creationTime"], "NULL"), (["lastAccessed"], "NULL"),
            (["originAttributes"], "''"),
        ])

    static func read(_ database: SQLiteDatabase, site: SiteDomain) throws(SQLiteError) -> Result<StoredCookies, BrowserCookieError> {
        let select: String
        switch try query.select(in: database) {
        case .success(let text): select = text
        case .failure(let failure): return .failure(failure)
        }
        let schema = try database.integer("PRAGMA user_version") ?? 0
        let expiryUnit: Double = schema >= millisecondExpirySchema ? 1000 : 1
        var stored = StoredCookies()
        try database.rows(select) { row in
            guard let (host, name) = stored.siteRow(row, site: site) else { return }
            guard let value = row.text(2) ?? (row.isNull(2) ? "" : nil), let path = row.text(3) ?? (row.isNull(3) ? "/" : nil) else {
                stored.refused.append(.rejected(name: name, reason: "its value or path is not UTF-8 text"))
                return
            }
            let origin = row.text(10) ?? ""
            guard origin.isEmpty else {
                stored.refused.append(.rejected(name: name, reason: "it was set in \(Self.context(origin)), not for the site itself"))
                return
            }
            let expiry = row.int64(4)
            stored.rows.append(StoredCookie(
                name: name, value: .plain(value), host: host, path: path,
                expires: expiry > 0 ? Date(timeIntervalSince1970: Double(expiry) / expiryUnit) : nil,
                secure: row.int64(5) != 0, httpOnly: row.int64(6) != 0, sameSite: StoredCookie.sameSite(row.int64(7)),
                created: row.isNull(8) ? nil : BrowserTime.unix(microseconds: row.int64(8)),
                lastAccess: row.isNull(9) ? nil : BrowserTime.unix(microseconds: row.int64(9))))
        }
        return .success(stored)
    }

    /// What a non-empty `originAttributes` means, in words.
    static func context(_ originAttributes: String) -> String {
        if originAttributes.contains("partitionKey=") { return "a third-party context (a partitioned cookie)" }
        if originAttributes.contains("userContextId=") { return "a container tab" }
        if originAttributes.contains("privateBrowsingId=") { return "a private window" }
        return "another context (originAttributes \(originAttributes))"
    }
}
