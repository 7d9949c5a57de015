/// The clock a schedule's timers run on: monotonic time, counted as ``Now/monotonic`` and every deadline of a
/// ``SiteSchedule`` and a ``LoginGate`` count it, so setting the wall clock never moves a timer.
/// `ContinuousClock` is the real one (it keeps counting while the machine is suspended); a test passes a clock it
/// moves itself, so that a driver's timers fire without anyone waiting real seconds.
public protocol MonotonicClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }
    /// Returns once ``now`` has reached `deadline`; throws `CancellationError` when the calling task is cancelled
    /// first.
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws
}

extension ContinuousClock: MonotonicClock {}
