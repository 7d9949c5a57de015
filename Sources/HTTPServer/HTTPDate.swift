import CookieJar
import Foundation
import Locking

/// The `Date` field every answer carries (RFC 9110 section 6.6.1: an origin server with a clock sends it), in
/// its IMF-fixdate form (section 5.6.7), made once a second for all connections.
enum HTTPDate {
    private static let cache = Locked<(second: Int, text: String)>((-1, ""))

    /// Now, as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func now() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if let text = cache.withLock({ $0.second == second ? $0.text : nil }) { return text }
        let text = format(second)
        cache.withLock { $0 = (second, text) }
        return text
    }

    /// `secondsSinceEpoch` (UTC) as IMF-fixdate, written by the cookie jar's one formatter of it.
    static func format(_ secondsSinceEpoch: Int) -> String {
        CookieTime.httpDate(Date(timeIntervalSince1970: TimeInterval(secondsSinceEpoch)))
    }
}
