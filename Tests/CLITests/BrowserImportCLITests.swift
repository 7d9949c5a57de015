import CookieJar
import Crypto
import CryptoExtras
import Foundation
import TestSupport
import Testing

/// `sessionkeeper import SITE --from-browser …` as a user runs it: the built binary, HOME holding a Firefox
/// and a Chromium profile the test made (databases written by BrowserCookiesTests' fixture script, with
/// Python's sqlite3), the session stored in the vault and read back with `cookie`.
@Suite(.serialized) struct BrowserImportCLITests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("BrowserCookiesTests/Fixtures/make_cookie_database.py").path

    /// Writes `spec` (make_cookie_database.py's format) to a file and runs the script.
    static func makeDatabase(_ spec: String, world: ClientWorld) async throws {
        let specPath = try world.folder.write(spec, to: "spec-\(UUID().uuidString).json")
        let made = try await runProgram("/usr/bin/python3", [script, specPath])
        try #require(made.status == 0, "\(made.errorText)")
    }

    @Test func firefoxsDefaultProfileGivesTheSitesCookiesAndNoValueIsPrinted() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        let root = world.folder.path(".mozilla/firefox")
        try FileManager.default.createDirectory(atPath: root + "/abcd.default-release", withIntermediateDirectories: true)
        try "[Profile0]\nName=default-release\nIsRelative=1\nPath=abcd.default-release\nDefault=1\n"
            .write(toFile: root + "/profiles.ini", atomically: true, encoding: .utf8)
        let now = Date()
        let expiry = Int64((now.timeIntervalSince1970 + 3600) * 1000)
        try await Self.makeDatabase("""
            {"browser": "firefox", "path": "\(root)/abcd.default-release/cookies.sqlite", "rows": [
              {"name": "sid", "value": "firefox-sid", "host": "app.example.com", "expiry": \(expiry), "isSecure": 1, "isHttpOnly": 1, "sameSite": 1},
              {"name": "pref", "value": "compact", "host": ".example.com", "path": "/settings", "expiry": \(expiry)},
              {"name": "sess", "value": "session-value", "host": ".example.com", "expiry": 0},
              {"name": "old", "value": "old-value", "host": "app.example.com", "expiry": \(expiry - 7_200_000)},
              {"name": "tracker", "value": "tracker-value", "host": ".other.org", "expiry": \(expiry)}
            ]}
            """, world: world)

        let run = try await world.run(["import", "manual", "--from-browser", "firefox"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("imported 3 cookie(s) for manual"), "\(run.stdout)")
        #expect(run.stderr.contains("refused cookie 'old'") && run.stderr.contains("expired"), "\(run.stderr)")
        #expect(run.stderr.contains("left out 1 cookie(s) of other sites"), "\(run.stderr)")
        for value in ["firefox-sid", "compact", "session-value", "old-value", "tracker-value"] {
            #expect(!run.stdout.contains(value) && !run.stderr.contains(value), "a cookie value was printed")
        }
        let stored = try await world.run(["cookie", "manual", "--format", "json"])
        #expect(stored.status == 0, "\(stored.stderr)")
        let cookies = try CookieCodec.decode(stored.stdout, as: .json, url: nil, now: now)
        #expect(Set(cookies.map(\.name)) == ["sid", "pref", "sess"])
        let sid = try #require(cookies.first { $0.name == "sid" })
        #expect(sid.hostOnly && sid.secure && sid.httpOnly && sid.sameSite == .lax)

        // Usage mistakes: both a file and a browser, neither, an unknown browser, a missing profile.
        #expect(try await world.run(["import", "manual", "x.txt", "--from-browser", "firefox"]).status == 2)
        #expect(try await world.run(["import", "manual"]).status == 2)
        let unknown = try await world.run(["import", "manual", "--from-browser", "netscape"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown browser 'netscape'"), "\(unknown.stderr)")
        let missing = try await world.run(["import", "manual", "--from-browser", "firefox:work"])
        #expect(missing.status == 2 && missing.stderr.contains("no Firefox profile named 'work'"), "\(missing.stderr)")
    }

    @Test func chromiumsV10ValuesAreDecryptedAndStored() async throws {
        let world = try ClientWorld()
        defer { world.cleanUp() }
        let profile = world.folder.path(".config/chromium/Default/Network")
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        // Chromium's Linux v10 encryption, done here with swift-crypto: PBKDF2-HMAC-SHA1("peanuts",
        // "saltysalt", 1, 16 bytes), AES-128-CBC with an IV of 16 spaces, SHA-256 of the host first (version 24).
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array("peanuts".utf8), salt: Array("saltysalt".utf8), using: .insecureSHA1, outputByteCount: 16,
            unsafeUncheckedRounds: 1)
        func encrypted(_ value: String, host: String) throws -> String {
            let plaintext = Array(SHA256.hash(data: Array(host.utf8))) + Array(value.utf8)
            let ciphertext = try AES._CBC.encrypt(plaintext, using: key, iv: try AES._CBC.IV(ivBytes: [UInt8](repeating: 0x20, count: 16)))
            return (Array("v10".utf8) + Array(ciphertext)).map { String(format: "%02x", $0) }.joined()
        }
        let expiry = Int64((Date().timeIntervalSince1970 + 3600 + 11_644_473_600) * 1_000_000)
        try await Self.makeDatabase("""
            {"browser": "chromium", "path": "\(profile)/Cookies", "meta_version": 24, "rows": [
              {"name": "sid", "host_key": "app.example.com", "expires_utc": \(expiry), "is_secure": 1, "is_httponly": 1,
               "encrypted_value_hex": "\(try encrypted("chromium-sid", host: "app.example.com"))"},
              {"name": "tracker", "host_key": ".other.org", "expires_utc": \(expiry),
               "encrypted_value_hex": "\(try encrypted("tracker-value", host: ".other.org"))"}
            ]}
            """, world: world)
        let run = try await world.run(["import", "manual", "--from-browser", "chromium"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("imported 1 cookie(s) for manual (sid)"), "\(run.stdout)")
        #expect(!run.stdout.contains("chromium-sid") && !run.stderr.contains("chromium-sid"))
        let header = try await world.run(["cookie", "manual"])
        #expect(header.stdout == "sid=chromium-sid\n", "\(header.stdout) \(header.stderr)")
    }
}
