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

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `secondsSinceEpoch` (UTC) as IMF-fixdate; the civil date from days since 1970 as in Howard Hinnant's
    /// `civil_from_days` (proleptic Gregorian calendar).
    static func format(_ secondsSinceEpoch: Int) -> String {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let inDay = secondsSinceEpoch - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = weekdays[((days % 7) + 11) % 7]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(inDay / 3600)):\(two(inDay % 3600 / 60)):\(two(inDay % 60)) GMT"
    }
}
