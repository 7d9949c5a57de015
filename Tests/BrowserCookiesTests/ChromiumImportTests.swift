@testable import BrowserCookies
import CookieJar
import Foundation
import JSON
import TestSupport
import Testing

/// Chromium profiles made by the test: values encrypted as Chromium does on Linux (v10, with and without the
/// host digest of database version 24), profiles by `Local State` name, and v11 through the keyring.
@Suite struct ChromiumImportTests {
    @Test func aKnownV10ValueMadeWithOpenSSLDecrypts() throws {
        let data = try Data(contentsOf: BrowserHome.fixtures.appendingPathComponent("chromium-v10-known-answer.json"))
        let fixture = try JSONValue.parse(Array(data))
        guard case .string(let hex)? = fixture["encrypted_value_hex"], case .string(let value)? = fixture["value"],
              case .string(let keyHex)? = fixture["key_hex"] else {
            Issue.record("the fixture lacks a field")
            return
        }
        let bytes = stride(from: 0, to: hex.count, by: 2).compactMap { offset -> UInt8? in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
        }
        let cipher = try ChromiumCipher()
        #expect(cipher.fixedKey.withUnsafeBytes { Data($0) }.map { String(format: "%02x", $0) }.joined() == keyHex)
        #expect(try cipher.decrypt(bytes, hostKey: "app.example.com", carriesHostDigest: false).get() == value)
    }

    @Test(arguments: [23, 24])
    func v10ValuesOfTheDefaultProfileAreDecrypted(metaVersion: Int) async throws {
        let world = try BrowserHome("v10 \(metaVersion)")
        defer { world.cleanUp() }
        try world.makeChromiumProfiles()
        let now = Date()
        let digest = metaVersion >= 24
        func encrypted(_ value: String, _ host: String) throws -> [UInt8] { try BrowserHome.encrypt(value, host: host, hostDigest: digest) }
        try await world.makeDatabase(BrowserHome.spec("chromium", path: world.chromiumRoot + "/Default/Network/Cookies", rows: [
            BrowserHome.chromiumRow("sid", encrypted: try encrypted("chromium-sid", "app.example.com"), host: "app.example.com",
                                    expiry: now + 3600, secure: true, httpOnly: true, sameSite: 1),
            BrowserHome.chromiumRow("pref", encrypted: try encrypted("compact", ".example.com"), host: ".example.com",
                                    path: "/settings", expiry: now + 86_400, sameSite: 2),
            BrowserHome.chromiumRow("sess", encrypted: try encrypted("session-value", ".example.com"), host: ".example.com",
                                    expiry: nil, sameSite: 0),
            BrowserHome.chromiumRow("old", encrypted: try encrypted("old-value", "app.example.com"), host: "app.example.com",
                                    expiry: now - 3600),
            BrowserHome.chromiumRow("tracker", encrypted: try encrypted("tracker-value", ".other.org"), host: ".other.org",
                                    expiry: now + 3600),
            BrowserHome.chromiumRow("chips", encrypted: try encrypted("chips-value", "app.example.com"), host: "app.example.com",
                                    expiry: now + 3600, topFrameSite: "https://other.org"),
            // A value moved from another host does not carry this host's digest (only checked from version 24).
            BrowserHome.chromiumRow("moved", encrypted: try encrypted("moved-value", "evil.example.net"), host: "app.example.com",
                                    expiry: now + 3600),
        ], version: metaVersion))

        let selection = try await world.reader().read(BrowserSource(browser: .chromium), baseURL: BrowserHome.baseURL, now: now)
        #expect(selection.database == world.chromiumRoot + "/Default/Network/Cookies")
        #expect(selection.otherSites == 1)
        let refusedNames = selection.refused.compactMap { decision -> String? in
            if case .rejected(let name, _) = decision { return name }
            return nil
        }
        #expect(Set(refusedNames) == (digest ? ["chips", "moved"] : ["chips"]))
        let (kept, jarRefused) = BrowserHome.admitted(selection, now: now)
        #expect(jarRefused == ["old"])
        let byName = Dictionary(uniqueKeysWithValues: kept.map { ($0.name, $0) })
        #expect(Set(byName.keys) == (digest ? ["sid", "pref", "sess"] : ["sid", "pref", "sess", "moved"]))
        let sid = try #require(byName["sid"])
        #expect(sid.value == "chromium-sid" && sid.hostOnly && sid.domain == "app.example.com")
        #expect(sid.secure && sid.httpOnly && sid.sameSite == .lax)
        #expect(abs((sid.expires?.timeIntervalSince1970 ?? 0) - (now + 3600).timeIntervalSince1970) < 0.01, "microseconds since 1601")
        let pref = try #require(byName["pref"])
        #expect(pref.value == "compact" && !pref.hostOnly && pref.domain == "example.com" && pref.path == "/settings" && pref.sameSite == .strict)
        let session = try #require(byName["sess"])
        #expect(session.isSessionOnly && session.sameSite == SameSite.none && session.value == "session-value")
        for decision in selection.refused {
            #expect(!"\(decision)".contains("-value"), "a refusal names the cookie, never its value")
        }
    }

    @Test func aProfileByTheNameLocalStateGivesItAndTheCookiesFileOfOlderVersions() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        try world.makeChromiumProfiles()
        let now = Date()
        // Before Chromium 96 the file sat in the profile folder itself.
        try await world.makeDatabase(BrowserHome.spec("chromium", path: world.chromiumRoot + "/Profile 1/Cookies", rows: [
            BrowserHome.chromiumRow("sid", encrypted: try BrowserHome.encrypt("work-sid", host: "app.example.com", hostDigest: false),
                                    host: "app.example.com", expiry: now + 3600),
        ], version: 21))
        for profile in ["Work", "work", "Profile 1", world.chromiumRoot + "/Profile 1"] {
            let selection = try await world.reader().read(BrowserSource(parsing: "chromium:" + profile), baseURL: BrowserHome.baseURL, now: now)
            #expect(selection.database == world.chromiumRoot + "/Profile 1/Cookies", "\(profile)")
            #expect(selection.cookies.map(\.value) == ["work-sid"], "\(profile)")
        }
    }

    /// v11 values need the keyring's password: a `secret-tool` on PATH stands for the desktop's Secret Service,
    /// once answering with the password and once finding none (as on a machine without a keyring).
    @Test func v11ValuesUseTheKeyringsPasswordAndFailClearlyWithoutOne() async throws {
        let world = try BrowserHome()
        defer { world.cleanUp() }
        try world.makeChromiumProfiles()
        let now = Date()
        let password = "keyring-password-1234"
        try await world.makeDatabase(BrowserHome.spec("chromium", path: world.chromiumRoot + "/Default/Network/Cookies", rows: [
            BrowserHome.chromiumRow("sid", encrypted: try BrowserHome.encrypt(
                "v11-sid", host: "app.example.com", password: password, version: "v11", hostDigest: true),
                                    host: "app.example.com", expiry: now + 3600),
            BrowserHome.chromiumRow("pref", encrypted: try BrowserHome.encrypt("v10-pref", host: ".example.com", hostDigest: true),
                                    host: ".example.com", expiry: now + 3600),
            BrowserHome.chromiumRow("net", encrypted: try BrowserHome.encrypt("v10-net", host: ".example.net", hostDigest: true),
                                    host: ".example.net", expiry: now + 3600),
        ], version: 24))

        let answering = world.folder.path("answering")
        let silent = world.folder.path("silent")
        for folder in [answering, silent] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        // The arguments must be Chromium's lookup; anything else finds nothing.
        try world.folder.write(
            "#!/bin/sh\n[ \"$*\" = \"lookup application chromium\" ] || exit 1\nprintf '%s' '\(password)'\n",
            to: "answering/secret-tool", mode: 0o755)
        try world.folder.write("#!/bin/sh\necho 'secret-tool: Cannot autolaunch D-Bus' >&2\nexit 1\n", to: "silent/secret-tool", mode: 0o755)

        let selection = try await world.reader(path: answering + ":/usr/bin:/bin").read(
            BrowserSource(browser: .chromium), baseURL: BrowserHome.baseURL, now: now)
        #expect(Set(selection.cookies.map(\.value)) == ["v11-sid", "v10-pref"])

        await #expect {
            try await world.reader(path: silent + ":/usr/bin:/bin").read(BrowserSource(browser: .chromium), baseURL: BrowserHome.baseURL, now: now)
        } throws: { error in
            let text = "\(error)"
            return text.contains("desktop keyring") && text.contains("secret-tool lookup application chromium")
                && text.contains("exit status 1") && !text.contains(password)
        }
        // No secret-tool at all.
        await #expect {
            try await world.reader(path: world.folder.path("nowhere")).read(BrowserSource(browser: .chromium), baseURL: BrowserHome.baseURL, now: now)
        } throws: { error in
            "\(error)".contains("cannot run") && "\(error)".contains("libsecret-tools")
        }
        // A site whose cookies are all v10 never asks the keyring.
        let other = try await world.reader(path: silent + ":/usr/bin:/bin").read(
            BrowserSource(browser: .chromium), baseURL: URL(string: "https://www.example.net/")!, now: now)
        #expect(other.cookies.map(\.value) == ["v10-net"])
    }
}
