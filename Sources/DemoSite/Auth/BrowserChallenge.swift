import Crypto
import Foundation

/// The JavaScript sign-in's challenge (`GET /app/challenge`): a nonce the page's script must combine with
/// the user name into a proof that only code running in the browser computes, so that no scripted HTTP
/// flow can sign in through `/app/session`.
///
/// A nonce is `SECONDS.RANDOM.SIGNATURE`: issued by this server (an HMAC under a key made at start-up), and
/// valid for ``lifetime`` seconds; it needs no server-side storage.
struct BrowserChallenges: Sendable {
    /// Seconds a nonce stays valid: long enough for a slow browser, short enough that a captured one is useless.
    static let lifetime: TimeInterval = 120

    private let key = SymmetricKey(size: .bits256)

    func issue(at now: Date) -> String {
        let payload = "\(Int(now.timeIntervalSince1970)).\(RandomToken.make())"
        return payload + "." + signature(of: payload)
    }

    /// True when `nonce` is one this server issued less than ``lifetime`` seconds before `now`.
    func isValid(_ nonce: String, at now: Date) -> Bool {
        let parts = nonce.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let issued = Int(parts[0]) else { return false }
        guard constantTimeEquals(signature(of: "\(parts[0]).\(parts[1])"), String(parts[2])) else { return false }
        let age = now.timeIntervalSince1970 - TimeInterval(issued)
        return age >= -5 && age <= Self.lifetime
    }

    /// The proof the page's script computes: FNV-1a (32 bits) over the UTF-8 of `nonce:username`, as eight
    /// lower-case hex digits. Not a security measure: a value that only running the page's code yields.
    static func proof(nonce: String, user: String) -> String {
        var hash: UInt32 = 0x811c_9dc5
        for byte in "\(nonce):\(user)".utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    private func signature(of payload: String) -> String {
        RandomToken.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data(payload.utf8), using: key)))
    }
}

/// `GET /api/signed`'s check (a common API pattern): `X-Signature` must be the lower-case hex
/// HMAC-SHA256, under the site's signing key, of `METHOD "\n" PATH "\n" TIMESTAMP`, where TIMESTAMP is
/// the `X-Signature-Timestamp` header (Unix seconds) and lies within ``allowedSkew`` of the site's clock.
struct RequestSignature: Sendable {
    /// How far a timestamp may be from the site's clock, either way: a stale signature is refused (a
    /// replay), and clocks of real clients drift a little.
    static let allowedSkew: TimeInterval = 300
    static let timestampHeader = "X-Signature-Timestamp"
    static let signatureHeader = "X-Signature"

    enum Verdict: Equatable {
        case valid
        case missing
        case stale
        case wrong
    }

    let key: SymmetricKey

    init(key: String) {
        self.key = SymmetricKey(data: Data(key.utf8))
    }

    func signature(method: String, path: String, timestamp: String) -> String {
        let message = "\(method.uppercased())\n\(path)\n\(timestamp)"
        return HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: key).map { String(format: "%02x", $0) }.joined()
    }

    func check(method: String, path: String, timestamp: String?, signature given: String?, now: Date) -> Verdict {
        guard let timestamp, let given, let seconds = Int(timestamp) else { return .missing }
        guard abs(now.timeIntervalSince1970 - TimeInterval(seconds)) <= Self.allowedSkew else { return .stale }
        return constantTimeEquals(signature(method: method, path: path, timestamp: timestamp), given.lowercased()) ? .valid : .wrong
    }
}
