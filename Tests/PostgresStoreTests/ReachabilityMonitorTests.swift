import Foundation
@testable import PostgresStore
import Testing
import TestSupport

/// The reachability report as a pure rule on the test's clock: down at the first failure, up again only once
/// successes held for the settle time with no failure between, one log line per change.
struct ReachabilityMonitorTests {
    @Test func anOutageIsOneDownAndOneUpEvenWhenTheFirstStatementsAfterItFail() {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let log = CapturedLog()
        let monitor = ReachabilityMonitor(place: "db", logger: log.logger(), now: clock.function, settle: .seconds(2))
        monitor.succeeded()
        #expect(monitor.current == .reachable)

        monitor.failed("connecting to db: refused")
        clock.advance(by: 5)
        monitor.failed("renewing leases on db: no answer within 1s", keepingReason: true)
        guard case let .unreachable(_, reason) = monitor.current else {
            Issue.record("not unreachable: \(monitor.current)")
            return
        }
        #expect(reason == "connecting to db: refused", "a silence does not replace the refusal found before it")

        // The restart: the listener is back, a pool statement still times out, then everything goes through.
        monitor.succeeded()
        #expect(!monitor.current.isReachable, "one success is not yet a recovery")
        clock.advance(by: 1)
        monitor.failed("renewing leases on db: no answer within 1s", keepingReason: true)
        clock.advance(by: 1.5)
        monitor.succeeded()
        #expect(!monitor.current.isReachable, "the failure started the settle time again")
        clock.advance(by: 1)
        monitor.succeeded()
        #expect(!monitor.current.isReachable)
        clock.advance(by: 1)
        monitor.succeeded()
        #expect(monitor.current == .reachable)
        monitor.succeeded()

        #expect(log.lines(containing: "store unreachable").count == 1)
        #expect(log.lines(containing: "store reachable again").count == 1)
        #expect(log.lines(containing: "unreachable_for_s=10").count == 1, "\(log.all)")
    }

    @Test func withoutASettleTimeTheFirstSuccessIsARecovery() {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let monitor = ReachabilityMonitor(place: "db", logger: CapturedLog().logger(), now: clock.function, settle: .zero)
        monitor.failed("refused")
        #expect(!monitor.current.isReachable)
        monitor.succeeded()
        #expect(monitor.current.isReachable)
    }
}
