import CookieJar
import Foundation

/// A site's cookies as a browser profile holds them.
public struct BrowserCookieSelection: Sendable {
    /// The profile folder read.
    public var profile: String
    /// The cookie database read (the browser's own file; a private copy of it was opened).
    public var database: String
    /// The site's cookies, with their values, for the jar to judge (expired ones included: the jar refuses
    /// them and says so).
    public var cookies: [Cookie]
    /// Cookies of the site that cannot be imported, each `.rejected` with its name and why (never a value).
    public var refused: [CookieDecision]
    /// How many cookies of other sites the profile holds; they were left out unread.
    public var otherSites: Int
}

/// Reads a site's cookies from a browser profile on Linux (SPEC section 9, `import --from-browser`).
///
/// The profile is found as ``BrowserSource`` says, its cookie database is copied into a private folder (a
/// running browser holds it locked) and read there with SQLite, and only the cookies within the registrable
/// domain of the site's `base_url` are kept: the caller passes them through the site's jar. Chromium's
/// values are decrypted (``ChromiumCipher``); the desktop keyring is asked for its password only when one of
/// the site's values needs it.
public struct BrowserCookieReader: Sendable {
    /// `HOME`, under which the browsers keep their profiles.
    public var home: String
    /// The environment: `XDG_CONFIG_HOME`, and what `secret-tool` needs to reach the keyring.
    public var environment: [String: String]
    /// Relative profile folders are taken from here.
    public var currentDirectory: String

    public init(home: String, environment: [String: String], currentDirectory: String) {
        self.home = home
        self.environment = environment
        self.currentDirectory = currentDirectory
    }

    /// The cookies of the site at `baseURL` in the profile `source` names.
    public func read(_ source: BrowserSource, baseURL: URL, now: Date = Date()) async throws(BrowserCookieError) -> BrowserCookieSelection {
        let profile = try profileFolder(source)
        let database = try Self.database(of: source.browser, in: profile)
        let site = SiteDomain(baseURL: baseURL)
        let copy = try CookieDatabaseCopy.make(of: database)
        defer { copy.remove() }
        var selection = BrowserCookieSelection(profile: profile, database: database, cookies: [], refused: [], otherSites: 0)
        switch source.browser {
        case .firefox:
            let stored = try Self.readTable(copy: copy, original: database) { connection throws(SQLiteError) in
                try FirefoxCookieTable.read(connection, site: site)
            }
            selection.absorb(stored)
            for row in stored.rows {
                if case .plain(let value) = row.value { selection.admit(row, value: value, now: now) }
            }
        case .chromium:
            let reading = try Self.readTable(copy: copy, original: database) { connection throws(SQLiteError) in
                try ChromiumCookieTable.read(connection, site: site)
            }
            selection.absorb(reading.stored)
            let cipher = try await makeCipher(for: reading.stored.rows)
            for row in reading.stored.rows {
                switch row.value {
                case .plain(let value):
                    selection.admit(row, value: value, now: now)
                case .encrypted(let bytes):
                    switch cipher.decrypt(bytes, hostKey: row.host, carriesHostDigest: reading.valuesCarryHostDigest) {
                    case .success(let value): selection.admit(row, value: value, now: now)
                    case .failure(let failure): selection.refused.append(.rejected(name: row.name, reason: failure.description))
                    }
                }
            }
        }
        return selection
    }

    /// The profile's folder, checked to be one.
    func profileFolder(_ source: BrowserSource) throws(BrowserCookieError) -> String {
        let folder: String
        if source.profileIsFolder, let path = source.profile {
            folder = ProfileFiles.absolute(path, home: home, directory: currentDirectory)
        } else {
            switch source.browser {
            case .firefox: folder = try FirefoxProfiles.load(home: home, environment: environment).folder(for: source.profile)
            case .chromium: folder = try ChromiumProfiles.load(home: home, environment: environment).folder(for: source.profile)
            }
        }
        guard ProfileFiles.isFolder(folder) else { throw .notAFolder(source.browser, path: folder) }
        return folder
    }

    /// Where the browser keeps a profile's cookies.
    static func databaseCandidates(of browser: Browser, in profile: String) -> [String] {
        switch browser {
        case .firefox: [ProfileFiles.join(profile, "cookies.sqlite")]
        // Chromium 96 moved the file into Network/; a profile not opened since still has it at the top.
        case .chromium: [ProfileFiles.join(profile, "Network/Cookies"), ProfileFiles.join(profile, "Cookies")]
        }
    }

    static func database(of browser: Browser, in profile: String) throws(BrowserCookieError) -> String {
        let candidates = databaseCandidates(of: browser, in: profile)
        guard let found = candidates.first(where: ProfileFiles.isFile) else {
            throw .noCookieDatabase(browser, profile: profile, looked: candidates)
        }
        return found
    }

    /// Opens the copy and reads it with `body`; SQLite's refusals become errors naming the browser's own file.
    private static func readTable<Table>(
        copy: CookieDatabaseCopy, original: String, _ body: (SQLiteDatabase) throws(SQLiteError) -> Result<Table, BrowserCookieError>
    ) throws(BrowserCookieError) -> Table {
        let result: Result<Table, BrowserCookieError>
        do throws(SQLiteError) {
            result = try body(try copy.openAndUnlink())
        } catch {
            throw failure(error, original: original)
        }
        switch result {
        case .success(let table): return table
        case .failure(.unexpectedSchema(_, let missing)): throw .unexpectedSchema(path: original, missing: missing)
        case .failure(let failure): throw failure
        }
    }

    /// SQLite's refusal, said of the browser's file, with what to do.
    static func failure(_ error: SQLiteError, original: String) -> BrowserCookieError {
        let hint: String
        if error.isLocked {
            hint = "the database is locked; close the browser and try again"
        } else if error.isDamaged {
            hint = "the file is damaged or not an SQLite database (if the browser was writing to it, try again, or close the browser first)"
        } else {
            hint = ""
        }
        return .database(path: original, message: error.message, hint: hint)
    }

    /// The cipher for `rows`, with the keyring's key when one of them needs it.
    private func makeCipher(for rows: [StoredCookie]) async throws(BrowserCookieError) -> ChromiumCipher {
        let needsKeyring = rows.contains { row in
            if case .encrypted(let bytes) = row.value { return ChromiumCipher.version(of: bytes) == .v11 }
            return false
        }
        let password = needsKeyring ? try await ChromiumKeyring(environment: environment).password() : nil
        do {
            return try ChromiumCipher(keyringPassword: password)
        } catch {
            throw .keyringUnavailable(reason: "the key could not be derived from the keyring's password (\(error))")
        }
    }
}

extension BrowserCookieSelection {
    mutating func absorb(_ stored: StoredCookies) {
        refused += stored.refused
        otherSites += stored.otherSites
    }

    /// Keeps `row` with `value`, unless no Set-Cookie header could have made it (a line break in the value).
    mutating func admit(_ row: StoredCookie, value: String, now: Date) {
        let cookie = row.cookie(value: value, now: now)
        if let problem = cookie.fileProblem {
            refused.append(.rejected(name: row.name, reason: problem))
        } else {
            cookies.append(cookie)
        }
    }
}
