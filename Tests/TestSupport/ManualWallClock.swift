import Foundation
import Locking

/// A wall clock a test sets and moves by hand, so that expiry, TOTP and timing rules are checked without sleeping.
public final class ManualWallClock: Sendable {
    private let current: Locked<Date>

    public init(_ start: Date) { current = Locked(start) }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// The clock as the `now` function the code under test takes.
    public var function: @Sendable () -> Date { { [self] in self.now } }
}
