@testable import BrowserCookies
import CookieJar
import Crypto
import CryptoExtras
import Foundation
import JSON
import TestSupport
import Testing

/// A home folder whose browser profiles the test makes: Firefox's `profiles.ini` and `installs.ini` and
/// Chromium's `Local State` from Fixtures/, and cookie databases written by Fixtures/make_cookie_database.py
/// with Python's sqlite3, as the browsers write them.
struct BrowserHome {
    let folder: TemporaryFolder
    var home: String { folder.path("home") }
    var firefoxRoot: String { home + "/.mozilla/firefox" }
    var chromiumRoot: String { home + "/.config/chromium" }

    /// The site every test imports: `https://app.example.com`, registrable domain example.com.
    static let baseURL = URL(string: "https://app.example.com/")!
    static let fixtures = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!

    init(_ label: String = #function) throws {
        folder = try TemporaryFolder(label)
        try FileManager.default.createDirectory(atPath: folder.path("home"), withIntermediateDirectories: true)
    }

    func cleanUp() { folder.cleanUp() }

    /// The reader, with `environment` (HOME is the test's home) and `PATH` as given.
    func reader(path: String = "/usr/bin:/bin") -> BrowserCookieReader {
        BrowserCookieReader(home: home, environment: ["HOME": home, "PATH": path], currentDirectory: folder.path)
    }

    // MARK: Profiles

    /// Firefox's two profiles of Fixtures/profiles.ini (the default one and "work"), their folders made.
    func makeFirefoxProfiles() throws {
        for name in ["abcd1234.default-release", "w0rk1234.work"] {
            try FileManager.default.createDirectory(atPath: firefoxRoot + "/" + name, withIntermediateDirectories: true)
        }
        for list in ["profiles.ini", "installs.ini"] {
            try FileManager.default.copyItem(atPath: Self.fixtures.path + "/" + list, toPath: firefoxRoot + "/" + list)
        }
    }

    /// Chromium's `Default` and `Profile 1` ("Work" in Fixtures/Local State), their `Network` folders made.
    func makeChromiumProfiles() throws {
        for name in ["Default", "Profile 1"] {
            try FileManager.default.createDirectory(atPath: chromiumRoot + "/" + name + "/Network", withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(atPath: Self.fixtures.path + "/Local State", toPath: chromiumRoot + "/Local State")
    }

    // MARK: Databases

    /// Writes the database `spec` describes (see make_cookie_database.py).
    func makeDatabase(_ spec: JSONValue) async throws {
        let specPath = try folder.write(JSONWriter.write(spec), to: "spec-\(UUID().uuidString).json")
        let result = try await runProgram("/usr/bin/python3", [Self.script, specPath])
        try #require(result.status == 0, "make_cookie_database.py: \(result.errorText)")
    }

    /// Writes the database and keeps it open and locked as a running browser does, until the program is stopped.
    func holdDatabase(_ spec: JSONValue) async throws -> SpawnedProgram {
        let specPath = try folder.write(JSONWriter.write(spec), to: "spec-\(UUID().uuidString).json")
        return try await SpawnedProgram.start("/usr/bin/python3", ["-u", Self.script, specPath, "--hold"])
    }

    static var script: String { fixtures.path + "/make_cookie_database.py" }

    static func spec(
        _ browser: String, path: String, rows: [JSONValue], wal: Bool = false, version: Int? = nil, uncommitted: [JSONValue] = []
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("browser", .string(browser)), ("path", .string(path)), ("wal", .bool(wal)), ("rows", .array(rows)),
            ("uncommitted", .array(uncommitted)),
        ]
        if let version { members.append((browser == "firefox" ? "user_version" : "meta_version", .number(String(version)))) }
        return .object(members)
    }

    // MARK: Rows

    /// A `moz_cookies` row; `expiry` in the unit of `schema` (milliseconds from 16 on), 0 when nil.
    static func firefoxRow(
        _ name: String, _ value: String, host: String, path: String = "/", expiry: Date?, schema: Int = 16,
        secure: Bool = false, httpOnly: Bool = false, sameSite: Int = 256, origin: String = "", created: Date = Date()
    ) -> JSONValue {
        let unit = schema >= 16 ? 1000.0 : 1.0
        return .object([
            ("name", .string(name)), ("value", .string(value)), ("host", .string(host)), ("path", .string(path)),
            ("expiry", .number(String(Int64((expiry?.timeIntervalSince1970 ?? 0) * unit)))),
            ("isSecure", .number(secure ? "1" : "0")), ("isHttpOnly", .number(httpOnly ? "1" : "0")),
            ("sameSite", .number(String(sameSite))), ("originAttributes", .string(origin)),
            ("creationTime", .number(String(Int64(created.timeIntervalSince1970 * 1_000_000)))),
            ("lastAccessed", .number(String(Int64(created.timeIntervalSince1970 * 1_000_000)))),
        ])
    }

    /// A `cookies` row with its value encrypted as Chromium does on Linux (``encrypt(_:host:key:version:hostDigest:)``).
    static func chromiumRow(
        _ name: String, encrypted: [UInt8], host: String, path: String = "/", expiry: Date?, secure: Bool = false,
        httpOnly: Bool = false, sameSite: Int = -1, topFrameSite: String = ""
    ) -> JSONValue {
        .object([
            ("name", .string(name)), ("host_key", .string(host)), ("path", .string(path)),
            ("encrypted_value_hex", .string(encrypted.map { String(format: "%02x", $0) }.joined())),
            ("expires_utc", .number(String(expiry.map(chromiumTime) ?? 0))),
            ("has_expires", .number(expiry == nil ? "0" : "1")), ("is_persistent", .number(expiry == nil ? "0" : "1")),
            ("is_secure", .number(secure ? "1" : "0")), ("is_httponly", .number(httpOnly ? "1" : "0")),
            ("samesite", .number(String(sameSite))), ("top_frame_site_key", .string(topFrameSite)),
            ("creation_utc", .number(String(chromiumTime(Date())))), ("last_access_utc", .number(String(chromiumTime(Date())))),
        ])
    }

    /// Microseconds since 1601-01-01 UTC.
    static func chromiumTime(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 + 11_644_473_600) * 1_000_000)
    }

    /// Chromium's Linux encryption, done here with swift-crypto apart from the reader: the key is
    /// PBKDF2-HMAC-SHA1 of `password` ("peanuts" for v10) with salt "saltysalt", 1 iteration, 16 bytes;
    /// AES-128-CBC, PKCS#7, IV of 16 spaces; the plaintext prefixed with SHA-256 of the host when `hostDigest`.
    static func encrypt(
        _ value: String, host: String, password: String = "peanuts", version: String = "v10", hostDigest: Bool
    ) throws -> [UInt8] {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(password.utf8), salt: Array("saltysalt".utf8), using: .insecureSHA1, outputByteCount: 16,
            unsafeUncheckedRounds: 1)
        let plaintext = (hostDigest ? Array(SHA256.hash(data: Array(host.utf8))) : []) + Array(value.utf8)
        let iv = try AES._CBC.IV(ivBytes: [UInt8](repeating: 0x20, count: 16))
        return Array(version.utf8) + Array(try AES._CBC.encrypt(plaintext, using: key, iv: iv))
    }

    /// The cookies a jar with the `main-document-domain` policy keeps of `selection` for the site, and what
    /// it refused, as `import` puts them through it.
    static func admitted(_ selection: BrowserCookieSelection, now: Date) -> (kept: [Cookie], refused: [String]) {
        let jar = CookieStorage(acceptPolicy: .mainDocumentDomain, clock: { now })
        let decisions = jar.setCookies(selection.cookies, mainDocumentURL: baseURL)
        let refused = decisions.compactMap { decision -> String? in
            if case .rejected(let name, _) = decision { return name }
            return nil
        }
        return (jar.allCookies, refused)
    }
}
