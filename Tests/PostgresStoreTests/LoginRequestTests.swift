@testable import PostgresStore
import Testing

/// A login request's NOTIFY payload: its kind and the site's id round-trip, and the change feed's own payloads
/// (`site:VERSION`) are never taken for one.
@Suite struct LoginRequestTests {
    @Test func aPayloadRoundTripsAndOtherNotificationsAreNotRequests() throws {
        let id: [UInt8] = [0x00, 0x7F, 0xA5, 0xFF]
        let wanted = try #require(LoginRequestFeed.parse(LoginRequestFeed.payload(.wanted, id: id)))
        #expect(wanted.0 == .wanted && wanted.1 == "007fa5ff")
        #expect(try #require(LoginRequestFeed.parse(LoginRequestFeed.payload(.refresh, id: id))).0 == .refresh)
        for other in ["site:12", "secret:3", "keyring:1", "login-other:00", "login-wanted", ""] {
            #expect(LoginRequestFeed.parse(other) == nil, "\(other)")
        }
    }
}
