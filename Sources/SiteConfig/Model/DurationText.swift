import Platform

/// Durations as config files write them (SPEC section 2): a number and a unit, `500ms`, `30s`,
/// `10m`, `12h`, `7d`; several may be concatenated (`1h30m`). Also used by CLI options such as
/// `--min-valid` and `--wait`.
public enum DurationText {
    /// Largest accepted duration: 100 years, far beyond any sensible refresh period yet small
    /// enough that adding it to a date or a clock instant never overflows.
    public static let maximum: Duration = .seconds(100 * 365 * 86_400)

    private static let units: [(suffix: String, milliseconds: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000),
    ]

    /// Parses `text`; nil when it is not a duration (no unit, unknown unit, negative, too large).
    /// Fractions are allowed before a unit (`1.5h`) down to milliseconds.
    public static func parse(_ text: String) -> Duration? {
        var rest = Substring(text.trimmingCharacters(in: " \t"))
        guard !rest.isEmpty else { return nil }
        var totalMilliseconds: Double = 0
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let unitText = rest.prefix { $0.isASCII && $0.isLetter }
            guard let unit = units.first(where: { $0.suffix == unitText }) else { return nil }
            rest = rest.dropFirst(unitText.count)
            totalMilliseconds += value * Double(unit.milliseconds)
            guard totalMilliseconds <= Double(maximum.components.seconds) * 1000 else { return nil }
        }
        return .milliseconds(Int64(totalMilliseconds.rounded()))
    }

    /// The shortest exact spelling in the config syntax: `90s` → `1m30s`, `0.5s` → `500ms`.
    public static func format(_ duration: Duration) -> String {
        var milliseconds = duration.wholeMilliseconds
        if milliseconds == 0 { return "0s" }
        var output = milliseconds < 0 ? "-" : ""
        milliseconds = abs(milliseconds)
        for unit in units.filter({ $0.suffix != "w" }).reversed() where milliseconds >= unit.milliseconds {
            output += "\(milliseconds / unit.milliseconds)\(unit.suffix)"
            milliseconds %= unit.milliseconds
        }
        return output
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
