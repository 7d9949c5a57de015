import Crypto
import Foundation

/// Random identifiers for sessions, tickets and CSRF tokens.
enum RandomToken {
    /// 256 bits from the system's secure generator, as unpadded base64url (valid RFC 6265 cookie-octets).
    static func make() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { base64URL(Data($0)) }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Signed CSRF tokens for the double-submit pattern: the same token goes in a cookie and a hidden form
/// field, and a POST passes only when both are present, equal, and carry this server's signature (so a
/// token an attacker made up, or one from a previous run of the site, is refused).
struct CSRFTokens: Sendable {
    private let key = SymmetricKey(size: .bits256)

    func issue() -> String {
        let nonce = RandomToken.make()
        return nonce + "." + signature(of: nonce)
    }

    /// True when the field and the cookie are the same token and the token is one this server issued.
    func check(field: String?, cookie: String?) -> Bool {
        guard let field, let cookie, !field.isEmpty, constantTimeEquals(field, cookie) else { return false }
        let parts = field.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        return constantTimeEquals(signature(of: String(parts[0])), String(parts[1]))
    }

    private func signature(of nonce: String) -> String {
        RandomToken.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data(nonce.utf8), using: key)))
    }
}

/// Compares two strings in time that depends only on their lengths, never on where they first differ.
func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    let left = Array(lhs.utf8)
    let right = Array(rhs.utf8)
    guard left.count == right.count else { return false }
    var difference: UInt8 = 0
    for index in left.indices { difference |= left[index] ^ right[index] }
    return difference == 0
}
