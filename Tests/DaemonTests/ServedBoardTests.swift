import CookieJar
@testable import Daemon
import Foundation
import Scheduler
import LoginFlow
import Sessions
import SiteConfig
import Testing

/// ``ServedBoard/fitUntil(site:record:session:)`` against the rule it stands for: a session is fit at a horizon
/// when the schedule saw its essential cookies, the schedule's expiry is ahead and each essential cookie has a
/// live copy in the record. The socket's fast path keeps an answer while a request's horizon is before it.
@Suite struct ServedBoardTests {
    private static let start = Date(timeIntervalSince1970: 1_800_000_000)

    private static func site(essential: [String]) throws -> SiteDefinition {
        let yaml = """
            base_url: http://127.0.0.1:9/
            login: manual
            cookies: {essential: [\(essential.joined(separator: ", "))]}
            """
        let loader = ConfigurationLoader(environment: [:])
        let folder = FileManager.default.temporaryDirectory.path
        return try loader.loadSite(text: yaml, file: folder + "/board.yaml", config: loader.defaultConfig(directory: folder))
    }

    /// The rule stated horizon by horizon: every essential cookie among the record's live cookies, and the
    /// schedule's view of the session valid.
    private static func fitByTheRule(site: SiteDefinition, record: SessionRecord, session: SessionSummary, at horizon: Date) -> Bool {
        let live = record.liveCookies(at: horizon)
        let present = site.cookies.essential.allSatisfy { entry in live.contains { entry.matches($0, baseURL: site.baseURL) } }
        return present && session.isValid(at: horizon)
    }

    @Test func fitUntilIsWhereTheRuleStopsHolding() throws {
        // Cookies expiring at 10, 20, 30 s, one twice (the later copy counts), one never, one absent.
        let cookies: [(String, Double?)] = [("a", 10), ("b", 20), ("b", 30), ("c", nil), ("d", 5)]
        let record = SessionRecord(
            cookies: cookies.map { name, seconds in
                Cookie(name: name, value: "v", domain: "127.0.0.1", expires: seconds.map { Self.start.addingTimeInterval($0) })
            },
            lastLogin: Self.start, expiresAt: nil, userAgent: nil)
        enum End { case never, none, at(Double) }
        let cases: [(essential: [String], sessionExpiry: Double?, present: Bool, expected: End)] = [
            (["a"], nil, true, .at(10)), (["b"], nil, true, .at(30)), (["c"], nil, true, .never), (["a", "b"], nil, true, .at(10)),
            (["b", "c"], 25, true, .at(25)), (["c"], 40, true, .at(40)), (["e"], nil, true, .none), (["c"], nil, false, .none),
            // A prefix entry stands for the cookies it matches, as the full name does.
            (["\"b*\""], nil, true, .at(30)), (["\"a*\"", "\"b*\""], nil, true, .at(10)), (["\"e*\""], nil, true, .none),
        ]
        for (essential, sessionExpiry, present, expected) in cases {
            let site = try Self.site(essential: essential)
            let session = SessionSummary(
                lastLogin: Self.start, expiresAt: sessionExpiry.map { Self.start.addingTimeInterval($0) }, essentialCookiesPresent: present)
            let until = ServedBoard.fitUntil(site: site, record: record, session: session)
            switch expected {
            case .never: #expect(until == .distantFuture, "\(essential)")
            case .none: #expect(until == .distantPast, "\(essential)")
            case .at(let seconds): #expect(until == Self.start.addingTimeInterval(seconds), "\(essential)")
            }
            // A publication on the board works the end out once, and serves by it.
            let entry = ServedBoard.Entry(site: site, record: record, session: session, phase: .valid)
            #expect(entry.fitUntil == until, "\(essential)")
            // Every horizon from before the start to after the last expiry, by half seconds: the two agree.
            for step in -4...90 {
                let horizon = Self.start.addingTimeInterval(Double(step) / 2)
                #expect((horizon < until) == Self.fitByTheRule(site: site, record: record, session: session, at: horizon),
                        "\(essential) at \(Double(step) / 2) s")
                let served = ServedBoard.usable(
                    site: site, record: record, session: session, minValid: .seconds(3), now: horizon.addingTimeInterval(-3))
                #expect((served != nil) == (horizon < until))
                #expect((entry.usable(minValid: .seconds(3), now: horizon.addingTimeInterval(-3)) != nil) == (horizon < until))
            }
        }
    }
}
