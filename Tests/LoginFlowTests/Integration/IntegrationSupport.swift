import CookieJar
import CurlTransport
import DemoSite
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import TestSupport
import Testing

/// Shared pieces of the integration tests: real servers on 127.0.0.1 started and stopped by each test,
/// the real libcurl client, site files loaded by SiteConfig as a user writes them.
enum Integration {
    /// Tests/LoginFlowTests/Fixtures/integration (found through the source file, so it works from any
    /// package that links this folder).
    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/integration")
    }

    /// A site file's text loaded with the built-in config defaults.
    static func site(_ yaml: String, name: String = "integration") throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        let config = loader.defaultConfig(directory: fixtures.path)
        return try loader.loadSite(text: yaml, file: fixtures.appendingPathComponent("\(name).yaml").path, config: config)
    }

    /// An engine over `client` with these credentials and no environment.
    static func engine(_ client: CurlHTTPClient, credentials: [String: String] = [:]) -> FlowEngine {
        FlowEngine(client: client, credentials: DictionaryCredentials(values: credentials), environment: [:])
    }

    /// Runs `body` with a demo site and a libcurl client; both are stopped afterwards, also on failure.
    static func withDemo(
        _ configuration: DemoSite.Configuration, _ body: (DemoSite.RunningServer, CurlHTTPClient) async throws -> Void
    ) async throws {
        let server = try await DemoSite.start(configuration: configuration)
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient()
        } catch {
            await server.stop()
            throw error
        }
        do {
            try await body(server, client)
        } catch {
            client.shutdown()
            await server.stop()
            throw error
        }
        client.shutdown()
        await server.stop()
    }

    /// Runs `body` with `odd_server.py` (extra arguments such as `--cert`) and a libcurl client; both are
    /// stopped afterwards, also on failure.
    static func withOddServer(
        _ arguments: [String] = [], _ body: (Int, CurlHTTPClient) async throws -> Void
    ) async throws {
        let server = try await PythonServer.start(script: fixtures.appendingPathComponent("odd_server.py").path, arguments: arguments)
        do {
            let client = try CurlHTTPClient()
            defer { client.shutdown() }
            try await body(server.port, client)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// A self-signed certificate for 127.0.0.1 and localhost, valid one day, and its key: `cert.pem` and `key.pem`
    /// in `folder`, made with the openssl command.
    static func selfSignedCertificate(in folder: TemporaryFolder) async throws -> (cert: String, key: String) {
        let cert = folder.path("cert.pem"), key = folder.path("key.pem")
        let made = try await runTool("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        try #require(made.status == 0, "openssl failed: \(made.output)")
        return (cert, key)
    }

    /// A JSON body as a dictionary.
    static func json(_ body: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    /// Runs a command to its end on a dedicated thread and returns its exit status and its standard output
    /// and error interleaved, for openssl.
    @discardableResult
    static func runTool(_ path: String, _ arguments: [String], environment: [String: String]? = nil, directory: URL? = nil) async throws -> (status: Int32, output: String) {
        let result = try await runProgram(
            path, arguments, environment: environment, directory: directory?.path, standardError: .mergedWithOutput)
        return (result.status, result.outputText)
    }
}


/// RFC 6238 TOTP (HMAC-SHA-1, 6 digits, 30 s), computed in the test independently of the demo site's code.
enum TestTOTP {
    static func code(base32 secret: String, at date: Date = Date()) -> String {
        let key = decodeBase32(secret)
        var counter = UInt64(date.timeIntervalSince1970 / 30).bigEndian
        let message = withUnsafeBytes(of: &counter) { Array($0) }
        let mac = hmacSHA1(key: key, message: message)
        let offset = Int(mac[19] & 0x0f)
        let binary = (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16)
            | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        let value = binary % 1_000_000
        let digits = String(value)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    static func decodeBase32(_ text: String) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var bits = 0, buffer = 0
        var bytes: [UInt8] = []
        for character in text.uppercased() where character != "=" && character != " " {
            guard let index = alphabet.firstIndex(of: character) else { continue }
            buffer = (buffer << 5) | index
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8((buffer >> (bits - 8)) & 0xff))
                bits -= 8
            }
        }
        return bytes
    }

    static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? sha1(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = sha1(block.map { $0 ^ 0x36 } + message)
        return sha1(block.map { $0 ^ 0x5c } + inner)
    }

    static func sha1(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var data = message + [0x80]
        while data.count % 64 != 56 { data.append(0) }
        let length = UInt64(message.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8((length >> UInt64(shift)) & 0xff)) }
        for chunk in stride(from: 0, to: data.count, by: 64) {
            var w = [UInt32](repeating: 0, count: 80)
            for i in 0..<16 {
                let j = chunk + i * 4
                w[i] = UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
            }
            for i in 16..<80 { w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotatedLeft(1) }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) = switch i {
                case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = a.rotatedLeft(5) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b.rotatedLeft(30), a, temp)
            }
            h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e
        }
        return h.flatMap { value in [24, 16, 8, 0].map { UInt8((value >> UInt32($0)) & 0xff) } }
    }
}

extension UInt32 {
    fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
}
