import NIOCore
import Testing

@testable import SocketAPI

/// An event a client can repeat at will is logged at most once per interval, each line counting those since the
/// last.
struct LogThrottleTests {
    @Test func theFirstEventIsLoggedAndTheNextOnesWaitForTheIntervalThenCountTogether() {
        let throttle = LogThrottle(interval: .seconds(10))
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(throttle.count(now: start) == 1)
        #expect(throttle.count(now: start + .seconds(1)) == nil)
        #expect(throttle.count(now: start + .seconds(9)) == nil)
        #expect(throttle.count(now: start + .seconds(10)) == 3)
        #expect(throttle.count(now: start + .seconds(11)) == nil)
        #expect(throttle.count(now: start + .seconds(25)) == 2)
    }
}
