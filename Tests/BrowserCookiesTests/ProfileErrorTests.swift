@testable import BrowserCookies
import Foundation
import JSON
import TestSupport
import Testing

/// What a person reads when the profile or its database cannot be used: which browser, which profile or file,
/// and what to do.
@Suite struct ProfileErrorTests {
    @Test func browserSourcesParseAndUnknownBrowsersAreNamed() throws {
        #expect(try BrowserSource(parsing: "firefox") == BrowserSource(browser: .firefox))
        #expect(try BrowserSource(parsing: "Chromium:Profile 1") == BrowserSource(browser: .chromium, profile: "Profile 1"))
        #expect(try BrowserSource(parsing: "firefox:/a/b:c").profile == "/a/b:c")
        #expect(try BrowserSource(parsing: "firefox:").profile == nil)
        #expect(throws: BrowserCookieError.unknownBrowser("safari")) { try BrowserSource(parsing: "safari:x") }
        #expect("\(BrowserCookieError.unknownBrowser("safari"))".contains("firefox[:PROFILE] or chromium[:PROFILE]"))
    }

    @Test func missingProfilesAreNamedWithTheOnesThereAre() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        let reader = world.reader()

        // No Firefox at all: where it looked, and how to name a folder instead.
        await #expect {
            try await reader.read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL)
        } throws: { error in
            let text = "\(error)"
            return text.contains(".mozilla/firefox/profiles.ini") && text.contains("firefox:/path/to/profile")
        }
        try world.makeFirefoxProfiles()
        await #expect {
            try await reader.read(BrowserSource(browser: .firefox, profile: "personal"), baseURL: BrowserHome.baseURL)
        } throws: { error in
            let text = "\(error)"
            return text.contains("no Firefox profile named 'personal'") && text.contains("default-release (abcd1234.default-release)")
                && text.contains("work (w0rk1234.work)")
        }
        // The default profile exists but Firefox never wrote its cookies.
        await #expect {
            try await reader.read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL)
        } throws: { error in
            "\(error)".contains("abcd1234.default-release has no cookie database") && "\(error)".contains("cookies.sqlite")
        }
        await #expect {
            try await reader.read(BrowserSource(browser: .firefox, profile: world.folder.path("nowhere/profile")), baseURL: BrowserHome.baseURL)
        } throws: { error in
            "\(error)".contains("nowhere/profile does not exist or is not a folder")
        }

        await #expect {
            try await reader.read(BrowserSource(browser: .chromium), baseURL: BrowserHome.baseURL)
        } throws: { error in
            "\(error)".contains("no Chromium profiles found") && "\(error)".contains(".config/chromium")
        }
        try world.makeChromiumProfiles()
        await #expect {
            try await reader.read(BrowserSource(browser: .chromium, profile: "Play"), baseURL: BrowserHome.baseURL)
        } throws: { error in
            let text = "\(error)"
            return text.contains("no Chromium profile named 'Play'") && text.contains("Local State")
                && text.contains("Person 1 (Default)") && text.contains("Work (Profile 1)")
        }
        await #expect {
            try await reader.read(BrowserSource(browser: .chromium), baseURL: BrowserHome.baseURL)
        } throws: { error in
            "\(error)".contains("Network/Cookies") && "\(error)".contains("has no cookie database")
        }
    }

    @Test func severalInstallationsWithDifferentDefaultsMustBeChosenBetween() throws {
        let profileSections = """
            [Profile0]
            Name=one
            IsRelative=1
            Path=one.default
            [Profile1]
            Name=two
            IsRelative=0
            Path=/elsewhere/two
            Default=1

            """
        let profiles = INIFile(text: profileSections + "[InstallAAAA]\nDefault=one.default\n")
        let installs = INIFile(text: "[BBBB]\nDefault=/elsewhere/two\n")
        let firefox = FirefoxProfiles(root: "/home/u/.mozilla/firefox", profilesINI: profiles, installsINI: installs)
        #expect(firefox.installDefaults == ["/elsewhere/two", "/home/u/.mozilla/firefox/one.default"])
        #expect(throws: BrowserCookieError.ambiguousDefault(.firefox, candidates: ["two", "one (one.default)"], listedIn: firefox.listPath)) {
            try firefox.folder(for: nil)
        }
        #expect(try firefox.folder(for: "two") == "/elsewhere/two")
        // One installation: its default, over the older Default=1 mark.
        let one = FirefoxProfiles(root: "/r", profilesINI: profiles, installsINI: INIFile(text: ""))
        #expect(try one.folder(for: nil) == "/r/one.default")
        // No installation sections (Firefox before 67): the profile marked Default=1.
        let older = FirefoxProfiles(root: "/r", profilesINI: INIFile(text: profileSections), installsINI: INIFile(text: ""))
        #expect(try older.folder(for: nil) == "/elsewhere/two")
    }

    @Test func aDamagedDatabaseAndOneOfAnotherSchemaAreRefusedClearly() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        try world.makeFirefoxProfiles()
        let database = world.firefoxRoot + "/abcd1234.default-release/cookies.sqlite"
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: database))
        await #expect {
            try await world.reader().read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL)
        } throws: { error in
            let text = "\(error)"
            return text.contains(database) && text.contains("file is not a database") && text.contains("damaged or not an SQLite database")
                && !text.contains("sessionkeeper-browser-")
        }

        // A real database whose pages were overwritten halfway.
        try FileManager.default.removeItem(atPath: database)
        let now = Date()
        let rows = (0..<400).map { BrowserHome.firefoxRow("c\($0)", String(repeating: "v", count: 200), host: "app.example.com", expiry: now + 3600) }
        try await world.makeDatabase(BrowserHome.spec("firefox", path: database, rows: rows))
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: database))
        try handle.seek(toOffset: 4096)
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 16384))
        try handle.close()
        await #expect {
            try await world.reader().read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL)
        } throws: { error in
            "\(error)".contains("cannot read the cookie database \(database)") && "\(error)".contains("damaged")
        }

        // A Chromium database given as a Firefox profile's.
        try FileManager.default.removeItem(atPath: database)
        try await world.makeDatabase(BrowserHome.spec("chromium", path: database, rows: []))
        await #expect {
            try await world.reader().read(BrowserSource(browser: .firefox), baseURL: BrowserHome.baseURL)
        } throws: { error in
            "\(error)" == "the cookie database \(database) has no moz_cookies table; it is not one this version of sessionkeeper can read"
        }
    }
}
