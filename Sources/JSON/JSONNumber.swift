/// A JSON number's exact value, for comparing numbers written differently: sign, significant digits
/// without leading or trailing zeros, and a decimal exponent (value = 0.DIGITS × 10^exponent).
/// Never rounded through a binary floating-point type, so large ids compare digit for digit.
struct JSONNumber: Hashable {
    var negative: Bool
    var digits: [UInt8]
    var exponent: Int

    /// The number `text` denotes, or nil when it is not RFC 8259 number syntax (or its exponent does not
    /// fit an `Int`, which no real document has).
    init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard case .success(bytes.count) = JSONNumber.scan(bytes, from: 0) else { return nil }
        var index = 0
        negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var significant: [UInt8] = []
        var pointPosition: Int?
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            if bytes[index] == UInt8(ascii: ".") { pointPosition = significant.count } else { significant.append(bytes[index]) }
            index += 1
        }
        var decimalExponent = pointPosition ?? significant.count
        if index < bytes.count {
            guard let written = Int(String(decoding: bytes[(index + 1)...], as: UTF8.self)) else { return nil }
            let (sum, overflow) = decimalExponent.addingReportingOverflow(written)
            guard !overflow else { return nil }
            decimalExponent = sum
        }
        let leadingZeros = significant.prefix { $0 == UInt8(ascii: "0") }.count
        significant.removeFirst(leadingZeros)
        decimalExponent -= leadingZeros
        while significant.last == UInt8(ascii: "0") { significant.removeLast() }
        if significant.isEmpty {
            // Zero has one value whatever its sign or exponent.
            (negative, digits, exponent) = (false, [], 0)
        } else {
            (digits, exponent) = (significant, decimalExponent)
        }
    }

    /// Whether `text` is exactly one number in RFC 8259 section 6 syntax.
    static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard case .success(bytes.count) = scan(bytes, from: 0) else { return false }
        return true
    }

    struct SyntaxFailure: Error {
        var message: String
        var offset: Int
    }

    /// Scans one number from `start` (RFC 8259 section 6: `[ minus ] int [ frac ] [ exp ]`, no leading
    /// zeros); the result is the offset just past it, or what is wrong and where.
    static func scan(_ bytes: [UInt8], from start: Int) -> Result<Int, SyntaxFailure> {
        var index = start
        func digitRun() -> Int {
            let from = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            return index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digitRun()
        guard integerDigits > 0 else { return .failure(SyntaxFailure(message: "expected a value", offset: start)) }
        if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
            return .failure(SyntaxFailure(message: "a number has a leading zero", offset: integerStart))
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digitRun() > 0 else { return .failure(SyntaxFailure(message: "expected digits after '.' in a number", offset: index)) }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digitRun() > 0 else { return .failure(SyntaxFailure(message: "expected digits in a number's exponent", offset: index)) }
        }
        return .success(index)
    }
}

extension JSONValue {
    /// Whether `text` is one JSON number (RFC 8259 section 6), as ``JSONValue/number(_:)`` requires.
    public static func isNumberText(_ text: String) -> Bool { JSONNumber.isValid(text) }
}
