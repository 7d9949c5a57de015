import Crypto
import Foundation
import SiteConfig

/// Time-based one-time passwords, RFC 6238 (on HOTP, RFC 4226).
public enum TOTP {
    /// RFC 4226 section 5.3: 6 digits at least; 8 is what RFC 6238's test vectors use, and 31 bits of
    /// truncated HMAC hold at most 9 full digits.
    public static let digitRange = 6...9

    /// The code for `time`: T = floor(unix time / period) (RFC 6238 section 4.2), HMAC over T as an
    /// 8-byte big-endian counter, dynamic truncation (RFC 4226 section 5.3), modulo 10^digits,
    /// left-padded with zeros.
    public static func code(
        secret: [UInt8], time: Date, digits: Int = 6, period: Duration = .seconds(30),
        algorithm: TOTPParameters.Algorithm = .sha1
    ) -> String {
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        let step = max(period.components.seconds, 1)
        return hotp(secret: secret, counter: UInt64(max(seconds, 0) / step), digits: digits, algorithm: algorithm)
    }

    /// HOTP (RFC 4226 section 5.3).
    public static func hotp(secret: [UInt8], counter: UInt64, digits: Int, algorithm: TOTPParameters.Algorithm) -> String {
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let key = SymmetricKey(data: secret)
        let mac: [UInt8]
        switch algorithm {
        case .sha1: mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key))
        case .sha256: mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
        case .sha512: mac = Array(HMAC<SHA512>.authenticationCode(for: message, using: key))
        }
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary = UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16
            | UInt32(mac[offset + 2]) << 8 | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: max(0, digits - value.count)) + value
    }
}

/// One TOTP credential's codes: the key read from the vault and the site file's parameters. The key never leaves it.
public struct TOTPGenerator: Sendable {
    private let key: [UInt8]
    public let digits: Int
    /// RFC 6238's X, whole seconds.
    public let period: Duration
    public let algorithm: TOTPParameters.Algorithm

    init(key: [UInt8], digits: Int, period: Duration, algorithm: TOTPParameters.Algorithm) {
        self.key = key
        self.digits = digits
        self.period = period
        self.algorithm = algorithm
    }

    /// The code of period number `counter` (T of RFC 6238 section 4.2).
    public func code(forCounter counter: Int64) -> String {
        TOTP.hotp(secret: key, counter: UInt64(max(counter, 0)), digits: digits, algorithm: algorithm)
    }

    /// The code of the period that holds `time`.
    public func code(at time: Date) -> String {
        TOTP.code(secret: key, time: time, digits: digits, period: period, algorithm: algorithm)
    }
}

/// RFC 4648 base32, as authenticator apps show TOTP secrets: case-insensitive, spaces and hyphens
/// ignored, padding optional.
public enum Base32 {
    /// The decoded bytes, or nil when `text` has a character outside the alphabet or a bad length.
    public static func decode(_ text: String) -> [UInt8]? {
        var bits: UInt64 = 0
        var bitCount = 0
        var output: [UInt8] = []
        var symbols = 0
        for scalar in text.unicodeScalars {
            if scalar == " " || scalar == "-" || scalar == "=" || scalar == "\t" { continue }
            let value: UInt8
            switch scalar {
            case "A"..."Z": value = UInt8(scalar.value - 65)
            case "a"..."z": value = UInt8(scalar.value - 97)
            case "2"..."7": value = UInt8(scalar.value - 50 + 26)
            default: return nil
            }
            symbols += 1
            bits = bits << 5 | UInt64(value)
            bitCount += 5
            if bitCount >= 8 {
                bitCount -= 8
                output.append(UInt8(truncatingIfNeeded: bits >> UInt64(bitCount)))
                bits &= (1 << UInt64(bitCount)) - 1
            }
        }
        // RFC 4648 section 6: a final quantum has 2, 4, 5 or 7 symbols (or a full 8).
        guard symbols > 0, [0, 2, 4, 5, 7].contains(symbols % 8) else { return nil }
        return output
    }
}
