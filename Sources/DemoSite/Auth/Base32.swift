import Foundation

/// RFC 4648 section 6 base32 (the alphabet authenticator apps use for TOTP secrets).
enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Why decoding failed; `position` is a 1-based character index, never the secret's text.
    enum DecodingError: Error, Equatable, CustomStringConvertible {
        case invalidCharacter(position: Int)
        case invalidLength(symbols: Int)

        var description: String {
            switch self {
            case .invalidCharacter(let position): "invalid base32 character at position \(position)"
            case .invalidLength(let symbols): "\(symbols) base32 symbols cannot encode whole bytes"
            }
        }
    }

    /// Decodes base32, ignoring case, spaces, dashes and trailing `=` padding (as secrets are often
    /// shown in groups, "JBSW Y3DP ...").
    static func decode(_ text: String) throws(DecodingError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0
        var bitCount = 0
        var symbols = 0
        var paddingSeen = false
        for (index, character) in text.utf8.enumerated() {
            if character == UInt8(ascii: " ") || character == UInt8(ascii: "-") { continue }
            if character == UInt8(ascii: "=") {
                paddingSeen = true
                continue
            }
            let upper = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(character) ? character - 32 : character
            guard !paddingSeen, let value = alphabet.firstIndex(of: upper) else {
                throw .invalidCharacter(position: index + 1)
            }
            symbols += 1
            buffer = (buffer << 5) | UInt32(value)
            bitCount += 5
            if bitCount >= 8 {
                bitCount -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bitCount)))
                buffer &= (1 << UInt32(bitCount)) - 1
            }
        }
        // RFC 4648 6: a final quantum has 2, 4, 5 or 7 symbols; 1, 3 or 6 leftover symbols are not whole bytes.
        if [1, 3, 6].contains(symbols % 8) { throw .invalidLength(symbols: symbols) }
        return bytes
    }
}
