/// Delays after failures: exponential from `initial` up to `max`, each spread by the jitter so that
/// sites failing together do not retry together.
public struct Backoff: Sendable, Hashable {
    public var initial: Duration
    public var max: Duration
    public var jitter: Double

    public init(initial: Duration, max: Duration, jitter: Double) {
        self.initial = initial
        self.max = max
        self.jitter = jitter
    }

    /// The delay before try number `failures + 1` (`failures` ≥ 1), jittered by `random` in [0, 1).
    public func delay(afterFailures failures: Int, random: Double) -> Duration {
        let exponent = Swift.max(0, Swift.min(failures - 1, 30))
        var base = initial * (1 << exponent)
        if base > max || base < .zero { base = max }
        return Self.spread(base, jitter: jitter, random: random)
    }

    /// `value` moved by up to ±`jitter` of itself.
    public static func spread(_ value: Duration, jitter: Double, random: Double) -> Duration {
        guard jitter > 0 else { return value }
        let factor = 1 + jitter * (2 * random - 1)
        return value * Swift.max(0, factor)
    }
}

/// A small deterministic generator (SplitMix64), so a schedule driven by the same events and seed makes
/// the same decisions: the tests depend on it, and so does reproducing a report.
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
