import Foundation
import Sessions
import Testing

/// RFC 9110 section 10.2.3: `Retry-After: 120` or `Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`.
@Suite struct RetryAfterTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)  // Sun, 15 Jun 2025 15:06:40 GMT

    @Test(arguments: [
        ("120", Duration?.some(.seconds(120))),
        (" 5\t", .seconds(5)),
        ("0", .zero),
        ("Sun, 15 Jun 2025 15:07:40 GMT", .seconds(60)),  // IMF-fixdate
        ("Sunday, 15-Jun-25 15:07:40 GMT", .seconds(60)),  // obsolete RFC 850
        ("Sun Jun 15 15:07:40 2025", .seconds(60)),  // obsolete asctime
        ("Sat, 14 Jun 2025 15:06:40 GMT", .zero),  // in the past
        ("99999999999999999999", RetryAfter.maximumDelay),
        ("864000", RetryAfter.maximumDelay),  // ten days: capped at a week
        ("Wed, 01 Jan 2031 00:00:00 GMT", RetryAfter.maximumDelay),
        ("", nil),
        ("-5", nil),
        ("1.5", nil),
        ("soon", nil),
        ("12 seconds", nil),
    ])
    func parsesBothFormsAndRefusesTheRest(text: String, expected: Duration?) {
        #expect(RetryAfter.delay(from: text, now: Self.now) == expected)
    }
}
