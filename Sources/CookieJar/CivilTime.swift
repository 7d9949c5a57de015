import Foundation

/// Proleptic Gregorian calendar arithmetic in UTC, without Foundation's Calendar (which is slow, locale
/// dependent and not needed for cookie dates, which are always GMT).
enum CivilTime {
    static let secondsPerDay: Int64 = 86_400

    /// Days since 1970-01-01 for a Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The Gregorian date of a day count since 1970-01-01 (`civil_from_days`).
    static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func date(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) -> Date {
        let seconds = days(year: year, month: month, day: day) * secondsPerDay + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    struct Fields {
        var year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, weekday: Int64
        var nanoseconds: Int64
    }

    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years RFC 3339 and HTTP dates can write.
    static let writableSeconds: ClosedRange<TimeInterval> = -62_135_596_800...253_402_300_799

    /// The fields of `date`, clamped to ``writableSeconds``: a file may hold any expiry (a Playwright `expires`
    /// of 1e300, a cookies.txt expiry of Int64.max), and converting such a time to whole seconds would trap
    /// (found by fuzzing); writers show the nearest time they can write instead.
    static func fields(of date: Date) -> Fields {
        let raw = date.timeIntervalSince1970
        let interval = raw.isNaN ? 0 : min(max(raw, writableSeconds.lowerBound), writableSeconds.upperBound)
        let whole = Int64(interval.rounded(.down))
        var nanos = Int64(((interval - Double(whole)) * 1_000_000_000).rounded())
        var seconds = whole
        if nanos >= 1_000_000_000 { seconds += 1; nanos -= 1_000_000_000 }
        let dayCount = seconds >= 0 ? seconds / secondsPerDay : (seconds - secondsPerDay + 1) / secondsPerDay
        let secondOfDay = seconds - dayCount * secondsPerDay
        let civil = CivilTime.date(days: dayCount)
        // 1970-01-01 was a Thursday (index 4 with Sunday = 0).
        let weekday = ((dayCount % 7) + 7 + 4) % 7
        return Fields(year: civil.year, month: civil.month, day: civil.day, hour: secondOfDay / 3600,
                      minute: secondOfDay % 3600 / 60, second: secondOfDay % 60, weekday: weekday, nanoseconds: nanos)
    }
}

/// Formatting and parsing of the two textual time forms the jar writes: RFC 3339 (the json format) and the
/// IMF-fixdate of RFC 9110 section 5.6.7 (`Expires` attributes).
public enum CookieTime {
    static let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// `Thu, 01 Jan 2015 00:00:00 GMT` (RFC 9110 IMF-fixdate, whole seconds).
    public static func httpDate(_ date: Date) -> String {
        let f = CivilTime.fields(of: date)
        return "\(weekdayNames[Int(f.weekday)]), \(pad(f.day, 2)) \(monthNames[Int(f.month - 1)]) \(pad(f.year, 4)) "
            + "\(pad(f.hour, 2)):\(pad(f.minute, 2)):\(pad(f.second, 2)) GMT"
    }

    /// `2015-01-01T00:00:00Z`, or with `fractional` `2015-01-01T00:00:00.000000Z` (microseconds).
    public static func rfc3339(_ date: Date, fractional: Bool = false) -> String {
        var f = CivilTime.fields(of: date)
        var micros = (f.nanoseconds + 500) / 1000
        if micros >= 1_000_000 {
            // Rounding carried into the next second: recompute from the rounded instant.
            f = CivilTime.fields(of: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.up)))
            micros = 0
        }
        var text = "\(pad(f.year, 4))-\(pad(f.month, 2))-\(pad(f.day, 2))T\(pad(f.hour, 2)):\(pad(f.minute, 2)):\(pad(f.second, 2))"
        if fractional { text += "." + pad(micros, 6) }
        return text + "Z"
    }

    /// Parses RFC 3339 (`2015-01-01T00:00:00Z`, optional fraction, `Z` or `±hh:mm`); nil when malformed.
    public static func parseRFC3339(_ text: String) -> Date? {
        let b = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var value: Int64 = 0
            for i in start..<start + count {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                value = value * 10 + Int64(b[i] - 0x30)
            }
            return value
        }
        guard b.count >= 20, let year = number(0, 4), b[4] == 0x2D, let month = number(5, 2), b[7] == 0x2D,
              let day = number(8, 2), b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20,
              let hour = number(11, 2), b[13] == 0x3A, let minute = number(14, 2), b[16] == 0x3A,
              let second = number(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= CivilTime.daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < b.count, b[index] == 0x2E {
            index += 1
            var scale = 0.1
            let start = index
            while index < b.count, b[index] >= 0x30, b[index] <= 0x39 {
                fraction += Double(b[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < b.count else { return nil }
        var offset: Int64 = 0
        switch b[index] {
        case 0x5A, 0x7A:
            index += 1
        case 0x2B, 0x2D:
            guard let offsetHours = number(index + 1, 2), b.count > index + 3, b[index + 3] == 0x3A,
                  let offsetMinutes = number(index + 4, 2), offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offset = (offsetHours * 3600 + offsetMinutes * 60) * (b[index] == 0x2D ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == b.count else { return nil }
        let base = CivilTime.date(year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59))
        return Date(timeIntervalSince1970: base.timeIntervalSince1970 - Double(offset) + fraction)
    }
}

extension CookieTime {
    /// True when the instant is not a whole second, so writers keep the fraction and lose nothing.
    static func hasFraction(_ date: Date) -> Bool {
        let interval = date.timeIntervalSince1970
        return interval.rounded(.down) != interval
    }
}
