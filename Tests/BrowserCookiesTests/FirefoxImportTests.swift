@testable import BrowserCookies
import CookieJar
import Foundation
import JSON
import TestSupport
import Testing

/// Firefox profiles made by the test: the default profile found through profiles.ini and installs.ini, a
/// profile by name and by folder, exactly the site's cookies read, with their attributes.
@Suite struct FirefoxImportTests {
    /// The rows of the default profile: the site's cookies, one expired, one of another site, one of a
    /// container tab, one partitioned.
    static func defaultRows(now: Date) -> [JSONValue] {
        [
            BrowserHome.firefoxRow("sid", "firefox-sid", host: "app.example.com", expiry: now + 3600, secure: true, httpOnly: true, sameSite: 1),
            BrowserHome.firefoxRow("pref", "compact", host: ".example.com", path: "/settings", expiry: now + 86_400, sameSite: 2),
            BrowserHome.firefoxRow("sess", "session-value", host: ".example.com", expiry: nil, sameSite: 0),
            BrowserHome.firefoxRow("old", "old-value", host: "app.example.com", expiry: now - 3600),
            BrowserHome.firefoxRow("tracker", "tracker-value", host: ".other.org", expiry: now + 3600),
            BrowserHome.firefoxRow("contained", "contained-value", host: "app.example.com", expiry: now + 3600, origin: "^userContextId=2"),
            BrowserHome.firefoxRow("partitioned", "partitioned-value", host: "app.example.com", expiry: now + 3600,
                                   origin: "^partitionKey=%28https%2Cother.org%29"),
        ]
    }

    @Test func theDefaultProfileGivesExactlyTheSitesCookiesWithTheirAttributes() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        try world.makeFirefoxProfiles()
        let now = Date()
        try await world.makeDatabase(BrowserHome.spec(
            "firefox", path: world.firefoxRoot + "/abcd1234.default-release/cookies.sqlite", rows: Self.defaultRows(now: now)))
        // The other profile holds another session for the same site: it must not be read.
        try await world.makeDatabase(BrowserHome.spec(
            "firefox", path: world.firefoxRoot + "/w0rk1234.work/cookies.sqlite",
            rows: [BrowserHome.firefoxRow("sid", "work-sid", host: "app.example.com", expiry: now + 3600)]))

        let selection = try await world.reader().read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL, now: now)
        #expect(selection.profile == world.firefoxRoot + "/abcd1234.default-release")
        #expect(selection.database.hasSuffix("abcd1234.default-release/cookies.sqlite"))
        #expect(selection.otherSites == 1)
        let refused = Dictionary(uniqueKeysWithValues: selection.refused.compactMap { decision -> (String, String)? in
            if case .rejected(let name?, let reason) = decision { return (name, reason) }
            return nil
        })
        #expect(Set(refused.keys) == ["contained", "partitioned"])
        #expect(refused["contained"]?.contains("container") == true)
        #expect(refused["partitioned"]?.contains("partitioned") == true)

        let (kept, jarRefused) = BrowserHome.admitted(selection, now: now)
        #expect(jarRefused == ["old"], "the expired cookie is refused by the jar")
        let byName = Dictionary(uniqueKeysWithValues: kept.map { ($0.name, $0) })
        #expect(Set(byName.keys) == ["sid", "pref", "sess"])
        let sid = try #require(byName["sid"])
        #expect(sid.value == "firefox-sid" && sid.domain == "app.example.com" && sid.hostOnly)
        #expect(sid.secure && sid.httpOnly && sid.sameSite == .lax && sid.path == "/")
        #expect(abs((sid.expires?.timeIntervalSince1970 ?? 0) - (now + 3600).timeIntervalSince1970) < 0.01, "milliseconds read as such")
        let pref = try #require(byName["pref"])
        #expect(pref.domain == "example.com" && !pref.hostOnly && pref.path == "/settings" && pref.sameSite == .strict)
        #expect(!pref.secure && !pref.httpOnly)
        let session = try #require(byName["sess"])
        #expect(session.isSessionOnly && session.sameSite == SameSite.none)
        #expect(abs(sid.created.timeIntervalSince(now)) < 5, "creationTime in microseconds")
    }

    @Test func aProfileByNameByFolderNameAndByFolderAndAnOlderSchemaInSeconds() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        try world.makeFirefoxProfiles()
        let now = Date()
        let work = world.firefoxRoot + "/w0rk1234.work"
        // Schema 12: expiry in seconds; sameSite 256 (unset) reads as none given.
        try await world.makeDatabase(BrowserHome.spec(
            "firefox", path: work + "/cookies.sqlite",
            rows: [BrowserHome.firefoxRow("sid", "work-sid", host: "app.example.com", expiry: now + 7200, schema: 12)], version: 12))
        for profile in ["work", "WORK", "w0rk1234.work", work, "~/.mozilla/firefox/w0rk1234.work"] {
            let selection = try await world.reader().read(
                BrowserSource(parsing: "firefox:" + profile), baseURL: BrowserHome.baseURL, now: now)
            #expect(selection.profile == work, "\(profile)")
            let sid = try #require(selection.cookies.first, "\(profile)")
            #expect(sid.value == "work-sid" && sid.sameSite == nil)
            #expect(abs((sid.expires?.timeIntervalSince1970 ?? 0) - (now + 7200).timeIntervalSince1970) < 1, "seconds read as such")
        }
    }

    /// A running Firefox holds its database in exclusive locking mode, with recent changes still in the
    /// write-ahead log: the import reads a private copy, with the log, and sees what was committed.
    @Test func aDatabaseARunningBrowserHoldsLockedIsReadThroughItsCopy() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        try world.makeFirefoxProfiles()
        let now = Date()
        let database = world.firefoxRoot + "/abcd1234.default-release/cookies.sqlite"
        let browser = try await world.holdDatabase(BrowserHome.spec(
            "firefox", path: database, rows: [BrowserHome.firefoxRow("sid", "committed", host: "app.example.com", expiry: now + 3600)],
            wal: true, uncommitted: [BrowserHome.firefoxRow("late", "uncommitted", host: "app.example.com", expiry: now + 3600)]))
        #expect(FileManager.default.fileExists(atPath: database + "-wal"), "the committed row is still in the write-ahead log")

        // Opened directly, the database is locked; SQLite says so.
        #expect {
            let direct = try SQLiteDatabase.open(database, busyTimeout: .milliseconds(50))
            _ = try direct.columnNames(of: "moz_cookies")
        } throws: { error in
            (error as? SQLiteError)?.isLocked == true && "\(error)".contains("locked")
        }
        let selection = try await world.reader().read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL, now: now)
        #expect(selection.cookies.map(\.name) == ["sid"])
        #expect(selection.cookies.first?.value == "committed")

        // The copy sits in a folder only its owner enters, with the log beside it, and goes with remove().
        let copy = try CookieDatabaseCopy.make(of: database)
        let copyFolder = (copy.path as NSString).deletingLastPathComponent
        #expect(try FileManager.default.attributesOfItem(atPath: copyFolder)[.posixPermissions] as? Int == 0o700)
        #expect(FileManager.default.fileExists(atPath: copy.path + "-wal"))
        copy.remove()
        #expect(!FileManager.default.fileExists(atPath: copyFolder))
        // Opened, the copy is gone from the disk at once (a signal that skips `defer` leaves nothing behind),
        // and reads on through SQLite's descriptors.
        let opened = try CookieDatabaseCopy.make(of: database)
        let connection = try opened.openAndUnlink()
        #expect(!FileManager.default.fileExists(atPath: (opened.path as NSString).deletingLastPathComponent))
        #expect(try connection.columnNames(of: "moz_cookies").contains("value"))
        var values: [String] = []
        try connection.rows("SELECT value FROM moz_cookies WHERE name = 'sid'") { row in values.append(row.text(0) ?? "") }
        #expect(values == ["committed"], "what was only in the log is read too")
        await browser.kill()
    }
}
