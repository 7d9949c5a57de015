import CookieJar
import Foundation

/// One row of a browser's cookie table that belongs to the site, before its value is read.
struct StoredCookie: Sendable {
    /// How the browser keeps the value.
    enum Value: Sendable {
        /// As text (Firefox; Chromium's rows written before encryption, or with an empty `encrypted_value`).
        case plain(String)
        /// Encrypted (Chromium): the bytes of `encrypted_value`, version prefix included.
        case encrypted([UInt8])
    }

    var name: String
    var value: Value
    /// As stored: a leading dot for a domain cookie, none for a host-only one.
    var host: String
    var path: String
    var expires: Date?
    var secure: Bool
    var httpOnly: Bool
    var sameSite: SameSite?
    var created: Date?
    var lastAccess: Date?

    /// SameSite as both browsers number it: 0 None, 1 Lax, 2 Strict; anything else (Chromium's -1, Firefox's
    /// 256) is unspecified.
    static func sameSite(_ stored: Int64) -> SameSite? {
        switch stored {
        case 0: SameSite.none
        case 1: .lax
        case 2: .strict
        default: nil
        }
    }

    /// The cookie with `value`, as the jar stores it.
    func cookie(value: String, now: Date) -> Cookie {
        let created = created ?? now
        return Cookie(
            name: name, value: value, domain: host, hostOnly: !host.hasPrefix("."), path: path.isEmpty ? "/" : path,
            expires: expires, secure: secure, httpOnly: httpOnly, sameSite: sameSite, created: created,
            lastAccess: lastAccess ?? created)
    }
}

/// The rows of a cookie table, split by site.
struct StoredCookies: Sendable {
    /// The rows of the site (its registrable domain and every host under it).
    var rows: [StoredCookie] = []
    /// Rows of the site that cannot be imported, with why (a name, never a value).
    var refused: [CookieDecision] = []
    /// How many rows belong to other sites; they are neither read further nor reported one by one.
    var otherSites = 0
}

/// Which rows of a browser's cookie store belong to the site being imported: those whose domain lies within
/// the registrable domain of the site's `base_url` host, which is what the jar's `main-document-domain`
/// policy then admits. A browser profile holds every site's cookies; the others are only counted, and
/// Chromium's are never decrypted.
struct SiteDomain: Sendable, Hashable {
    /// The registrable domain (`example.com` for `app.example.com`), or the host itself for an IP address or
    /// a host that is a public suffix.
    var registrableDomain: String

    init(baseURL: URL) {
        let host = CookieRules.canonicalHost(of: baseURL) ?? ""
        registrableDomain = CookieRules.registrableDomain(of: host)
    }

    /// Whether a stored host (`.example.com`, `app.example.com`) belongs to the site.
    func contains(storedHost: String) -> Bool {
        var host = storedHost.lowercased()
        if host.hasPrefix(".") { host.removeFirst() }
        return !host.isEmpty && CookieRules.domainMatches(host: host, domain: registrableDomain)
    }
}

/// Times as browsers store them.
enum BrowserTime {
    /// Seconds from 1601-01-01 (Windows' FILETIME epoch, which Chromium uses on every platform) to 1970-01-01.
    static let windowsEpochOffset: TimeInterval = 11_644_473_600

    /// Chromium: microseconds since 1601-01-01 UTC.
    static func chromium(microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000 - windowsEpochOffset)
    }

    /// Firefox's `creationTime` and `lastAccessed`: microseconds since 1970-01-01 UTC.
    static func unix(microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }
}

extension StoredCookies {
    /// The host (column 0) and name (column 1) of a row that belongs to the site; nil for a row of another
    /// site (counted) or one whose name is not text (refused).
    mutating func siteRow(_ row: SQLiteRow, site: SiteDomain) -> (host: String, name: String)? {
        guard let host = row.text(0), site.contains(storedHost: host) else {
            otherSites += 1
            return nil
        }
        guard let name = row.text(1) else {
            refused.append(.rejected(name: nil, reason: "a cookie of \(host) whose name is not UTF-8 text"))
            return nil
        }
        return (host, name)
    }
}

/// The query of a browser's cookie table: the table and its required columns checked, then each optional
/// column by the first of its names the table has, or a stand-in value, so that every version of the table
/// reads with the same column numbers.
struct CookieTableQuery {
    var table: String
    var required: [String]
    var optional: [(names: [String], absent: String)]

    /// The `SELECT`, or what the database lacks.
    func select(in database: SQLiteDatabase) throws(SQLiteError) -> Result<String, BrowserCookieError> {
        guard try database.tableNames().contains(table) else {
            return .failure(.unexpectedSchema(path: database.path, missing: "\(table) table"))
        }
        let columns = try database.columnNames(of: table)
        if let missing = required.first(where: { !columns.contains($0) }) {
            return .failure(.unexpectedSchema(path: database.path, missing: "\(table).\(missing) column"))
        }
        let chosen = optional.map { column in column.names.first(where: columns.contains) ?? column.absent }
        return .success("SELECT \((required + chosen).joined(separator: ", ")) FROM \(table)")
    }
}
