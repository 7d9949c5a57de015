import Foundation

/// RFC 6265 section 5.1.1, the cookie-date algorithm: how a user agent reads the `Expires` attribute.
/// It is deliberately lenient (tokens in any order, junk after each field) because servers send every
/// date shape imaginable.
public enum CookieDateParser {
    /// The date a cookie-date string denotes, or nil when the algorithm fails (the attribute is then ignored).
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse($0[...]) }
    }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    @inline(__always)
    static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte)
            || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    static func parse(_ bytes: CookieBytes) -> Date? {
        var hour: Int64?, minute: Int64?, second: Int64?
        var dayOfMonth: Int64?, month: Int64?, year: Int64?
        var index = bytes.startIndex
        while index < bytes.endIndex {
            while index < bytes.endIndex, isDelimiter(bytes[index]) { index += 1 }
            let start = index
            while index < bytes.endIndex, !isDelimiter(bytes[index]) { index += 1 }
            guard index > start else { continue }
            let token = bytes[start..<index]
            // Step 2: the first token that matches each production wins, tried in this order.
            if hour == nil, let time = matchTime(token) {
                (hour, minute, second) = time
            } else if dayOfMonth == nil, let day = matchDigits(token, minCount: 1, maxCount: 2) {
                dayOfMonth = day
            } else if month == nil, let found = matchMonth(token) {
                month = found
            } else if year == nil, let found = matchDigits(token, minCount: 2, maxCount: 4) {
                year = found
            }
        }
        guard let hour, let minute, let second, let dayOfMonth, let month, var year else { return nil }
        // Steps 3 and 4: two-digit years.
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        // Step 5: out-of-range fields abort the algorithm.
        guard (1...31).contains(dayOfMonth), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        // Step 6: the date must exist (no 31 June).
        guard dayOfMonth <= CivilTime.daysIn(month: month, year: year) else { return nil }
        return CivilTime.date(year: year, month: month, day: dayOfMonth, hour: hour, minute: minute, second: second)
    }

    /// `1*2DIGIT`-style prefix of `minCount...maxCount` digits, followed by nothing or a non-digit and any octets.
    static func matchDigits(_ token: CookieBytes, minCount: Int, maxCount: Int) -> Int64? {
        var value: Int64 = 0
        var count = 0
        var index = token.startIndex
        while index < token.endIndex, isDigit(token[index]) {
            count += 1
            if count > maxCount { return nil }
            value = value * 10 + Int64(token[index] - 0x30)
            index += 1
        }
        return count >= minCount ? value : nil
    }

    /// time = hms-time [ non-digit *OCTET ]; hms-time = time-field ":" time-field ":" time-field; time-field = 1*2DIGIT
    static func matchTime(_ token: CookieBytes) -> (Int64, Int64, Int64)? {
        var fields: (Int64, Int64, Int64) = (0, 0, 0)
        var index = token.startIndex
        for part in 0..<3 {
            var value: Int64 = 0
            var count = 0
            while index < token.endIndex, isDigit(token[index]) {
                count += 1
                if count > 2 { return nil }
                value = value * 10 + Int64(token[index] - 0x30)
                index += 1
            }
            guard count >= 1 else { return nil }
            switch part {
            case 0: fields.0 = value
            case 1: fields.1 = value
            default: fields.2 = value
            }
            if part < 2 {
                guard index < token.endIndex, token[index] == 0x3A else { return nil }
                index += 1
            }
        }
        // Whatever follows must start with a non-digit, which the digit loop above guarantees.
        return fields
    }

    /// The month names' three bytes packed as `b0 << 16 | b1 << 8 | b2`, January first.
    static let months: [UInt32] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { $0.utf8.reduce(0) { $0 << 8 | UInt32($1) } }

    /// month = ( "jan" / "feb" / ... / "dec" ) *OCTET, case-insensitively.
    static func matchMonth(_ token: CookieBytes) -> Int64? {
        guard token.count >= 3 else { return nil }
        let start = token.startIndex
        let prefix = UInt32(token[start] | 0x20) << 16 | UInt32(token[start + 1] | 0x20) << 8 | UInt32(token[start + 2] | 0x20)
        for (number, name) in months.enumerated() where name == prefix {
            return Int64(number + 1)
        }
        return nil
    }
}

/// UTF-8 bytes borrowed from a String for the duration of a parse: no copy, no reference counting.
typealias CookieBytes = Slice<UnsafeBufferPointer<UInt8>>
