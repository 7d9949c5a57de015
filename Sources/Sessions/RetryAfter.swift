import CookieJar
import Foundation

/// The `Retry-After` response field (RFC 9110 section 10.2.3): either a number of seconds or an
/// HTTP-date.
public enum RetryAfter {
    /// The longest delay taken from a server, so a hostile or broken value cannot park a site for years.
    public static let maximumDelay: Duration = .seconds(7 * 24 * 3600)

    /// The delay a `Retry-After` value asks for, measured from `now`; nil when the value is neither form.
    /// A date in the past means no delay.
    public static func delay(from value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        guard !text.isEmpty else { return nil }
        // delay-seconds = 1*DIGIT
        if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // More digits than a week's seconds can have is the maximum, without overflowing.
            guard text.utf8.count <= 9, let seconds = Int64(text) else { return maximumDelay }
            return min(.seconds(seconds), maximumDelay)
        }
        // HTTP-date: IMF-fixdate, or the obsolete RFC 850 and asctime forms recipients must accept
        // (RFC 9110 section 5.6.7); the jar's date parser (RFC 6265 section 5.1.1) reads all three.
        guard text.contains(where: \.isLetter), let date = CookieDateParser.parse(text) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds > 0 else { return .zero }
        return min(.milliseconds(Int64((seconds * 1000).rounded(.up))), maximumDelay)
    }
}
