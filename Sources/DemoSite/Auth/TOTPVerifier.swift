import Crypto
import Foundation

/// The site's side of time-based one-time passwords, RFC 6238 over RFC 4226's HOTP: HMAC-SHA-1, 6 digits,
/// 30-second steps, a code accepted one step either side unless configured otherwise. Written apart from the client's `Credentials.TOTP` on
/// purpose: the demo site is the other party a client's codes are checked against, and one shared
/// implementation would agree with itself whatever its mistake.
struct TOTPVerifier: Sendable {
    /// RFC 6238 4.1: X, the time step; 30 seconds is the RFC's default and what authenticator apps use.
    static let timeStep: Int64 = 30
    /// RFC 4226 5.3: Digit = 6, the common length.
    static let digits = 6
    /// RFC 6238 5.2 recommends accepting at most one step of clock drift either way: the default.
    static let defaultDriftSteps = 1
    /// RFC 4226 4 R6 asks for at least 128 bits; 80 bits is accepted because the widely used example
    /// secrets (and many providers) have exactly 10 bytes.
    static let minimumSecretBytes = 10

    private let key: SymmetricKey
    /// Steps either side of the current one whose code is accepted (`--totp-drift`); 0 accepts only the current one.
    let driftSteps: Int64

    init(secret: [UInt8], driftSteps: Int = TOTPVerifier.defaultDriftSteps) {
        self.key = SymmetricKey(data: secret)
        self.driftSteps = Int64(driftSteps)
    }

    /// The code for the step that contains `date`, zero-padded to `digits`.
    func code(at date: Date) -> String {
        code(forCounter: Self.counter(at: date))
    }

    /// The time step whose code `candidate` is, looking at the step of `date` and ``driftSteps`` either side
    /// (RFC 6238 5.2); nil when it matches none of them.
    func matchingStep(_ candidate: String, at date: Date) -> Int64? {
        let trimmed = candidate.trimmingCharacters(in: .whitespaces)
        guard trimmed.utf8.count == Self.digits, trimmed.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let counter = Self.counter(at: date)
        var matched: Int64?
        // Every window is computed and compared in constant time, so timing tells nothing about which matched.
        for drift in -driftSteps...driftSteps where counter + drift >= 0 {
            if constantTimeEquals(code(forCounter: counter + drift), trimmed) { matched = counter + drift }
        }
        return matched
    }

    /// RFC 6238 4.2: T = floor((now - T0) / X) with T0 = 0.
    static func counter(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(timeStep)).rounded(.down))
    }

    /// RFC 4226 5.3: HMAC over the big-endian counter, dynamic truncation, modulo 10^Digit.
    func code(forCounter counter: Int64) -> String {
        var bigEndian = UInt64(bitPattern: counter).bigEndian
        let message = withUnsafeBytes(of: &bigEndian) { Data($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key))
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16)
            | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<Self.digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: Self.digits - value.count) + value
    }
}
