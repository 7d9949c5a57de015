import DemoSite
import Foundation
import HTTPTypes
import HTTPTypes
import NIOCore
import Testing
import TestSupport

/// The clock the demo site's tests move by hand.
typealias TestClock = ManualWallClock

extension ManualWallClock {
    convenience init() { self.init(Date(timeIntervalSince1970: 1_800_000_000)) }
}

/// One `Set-Cookie` header split into name, value and attributes (in their order).
struct SetCookie: Equatable, CustomStringConvertible {
    let name: String
    let value: String
    let attributes: [String]

    init(header: String) {
        let parts = header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let pair = parts[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        name = String(pair[0])
        value = pair.count > 1 ? String(pair[1]) : ""
        attributes = Array(parts.dropFirst())
    }

    var maxAge: Int? {
        attributes.first { $0.lowercased().hasPrefix("max-age=") }.flatMap { Int($0.dropFirst("max-age=".count)) }
    }

    /// Name and attributes only, so a failing expectation never prints a cookie value.
    var description: String { "\(name)=<\(value.count) chars>; " + attributes.joined(separator: "; ") }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    var setCookies: [SetCookie] { headers[values: .setCookie].map(SetCookie.init(header:)) }

    func cookie(_ name: String) -> SetCookie? { setCookies.first { $0.name == name } }

    var location: String? { headers[.location] }

    func json() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }
}

/// Header sets the tests send.
enum Headers {
    static let host = HTTPField.Name("Host")!

    static func cookies(_ pairs: [String: String], host: String? = nil, extra: HTTPFields = [:]) -> HTTPFields {
        var fields = extra
        if !pairs.isEmpty {
            fields[.cookie] = pairs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        if let host { fields[Self.host] = host }
        return fields
    }

    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
    static let json: HTTPFields = [.contentType: "application/json"]
}

/// `application/x-www-form-urlencoded` as a browser sends it.
func formBody(_ fields: KeyValuePairs<String, String>) -> ByteBuffer {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._*")
    let encoded = fields.map { name, value in
        let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: allowed)! }
        return encode(name) + "=" + encode(value)
    }
    return ByteBuffer(string: encoded.joined(separator: "&"))
}

/// The value of a hidden input, as a flow's extractor would find it.
func hiddenField(_ name: String, in html: String) throws -> String {
    let pattern = try NSRegularExpression(pattern: "<input type=\"hidden\" name=\"\(name)\" value=\"([^\"]*)\"")
    let range = NSRange(html.startIndex..., in: html)
    let match = try #require(pattern.firstMatch(in: html, range: range), "no hidden input \(name)")
    return String(html[Range(match.range(at: 1), in: html)!])
}

/// The steps of a browser login, shared by the tests.
struct LoginSteps {
    let client: SiteClient

    /// GET /login; returns the hidden csrf field and the demo_csrf cookie.
    func fetchForm(host: String? = nil) async throws -> (field: String, cookie: String) {
        let page = try await client.execute(uri: "/login", method: .get, headers: Headers.cookies([:], host: host))
        #expect(page.status == .ok)
        let cookie = try #require(page.cookie("demo_csrf"))
        return (try hiddenField("csrf", in: page.text), cookie.value)
    }

    func post(user: String = "alice", password: String = "wonderland", csrfField: String, csrfCookie: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/login",
            method: .post,
            headers: Headers.cookies(["demo_csrf": csrfCookie], extra: Headers.form),
            body: formBody(["csrf": csrfField, "username": user, "password": password])
        )
    }

    /// A full password login; returns the session id.
    func logIn() async throws -> String {
        let csrf = try await fetchForm()
        let response = try await post(csrfField: csrf.field, csrfCookie: csrf.cookie)
        #expect(response.status == .seeOther)
        return try #require(response.cookie("demo_session")).value
    }

    func me(session: String) async throws -> TestResponse {
        try await client.execute(uri: "/api/me", method: .get, headers: Headers.cookies(["demo_session": session]))
    }
}

/// RFC 6238 TOTP written independently of the site's own: HMAC-SHA-1 over the big-endian step count,
/// RFC 4226 5.3 dynamic truncation. Checked against RFC 6238 Appendix B before the site relies on it.
enum ReferenceTOTP {
    static func code(secret: [UInt8], unixTime: Int64, digits: Int = 6, step: Int64 = 30) -> String {
        let counter = UInt64(unixTime / step)
        let message = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
        let mac = hmacSHA1(key: secret, message: message)
        let offset = Int(mac[19] & 0x0f)
        let binary = (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        let modulus = (0..<digits).reduce(UInt32(1)) { value, _ in value * 10 }
        let text = String(binary % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// RFC 2104 HMAC over FIPS 180-4 SHA-1, so the test shares no crypto code with the site.
    static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? sha1(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = sha1(block.map { $0 ^ 0x36 } + message)
        return sha1(block.map { $0 ^ 0x5c } + inner)
    }

    static func sha1(_ input: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var message = input + [0x80]
        while message.count % 64 != 56 { message.append(0) }
        let bitLength = UInt64(input.count) * 8
        message += (0..<8).map { UInt8(truncatingIfNeeded: bitLength >> (56 - 8 * UInt64($0))) }
        for chunk in stride(from: 0, to: message.count, by: 64) {
            var w = (0..<16).map { i in
                (0..<4).reduce(UInt32(0)) { ($0 << 8) | UInt32(message[chunk + 4 * i + $1]) }
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w.append((x << 1) | (x >> 31))
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch i {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, (b << 30) | (b >> 2), a, temp)
            }
            h = [h[0] &+ a, h[1] &+ b, h[2] &+ c, h[3] &+ d, h[4] &+ e]
        }
        return h.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32($0))) } }
    }
}
