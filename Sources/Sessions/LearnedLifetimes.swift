import Foundation

/// What the daemon learned of a site's sessions (SPEC section 7, "Learned lifetimes"): between which bounds
/// its idle timeout (how long a session lives without use) and its lifetime (how long it lives at all) lie,
/// and how many observations back each. Kept in the site's ``SessionRecord``, so it survives a restart and
/// every keeper of a fleet reads the same values.
///
/// Each bound is a duration the daemon saw: `atLeast` the longest gap (or oldest age) a session was seen to
/// survive, `atMost` the shortest gap (or youngest age) after which one was found dead; nil when no session
/// died that way yet. The true value lies in (`atLeast`, `atMost`].
public struct LearnedLifetimes: Sendable, Hashable {
    /// One learned duration: it lies above `atLeast` and at or below `atMost`.
    public struct Bounds: Sendable, Hashable {
        /// Seen alive after this long (seconds); 0 when never.
        public var atLeast: Double
        /// Found dead after this long (seconds); nil when never.
        public var atMost: Double?
        /// Findings that moved or confirmed these bounds (sessions seen alive or found dead).
        public var observations: Int

        public init(atLeast: Double = 0, atMost: Double? = nil, observations: Int = 0) {
            self.atLeast = atLeast
            self.atMost = atMost
            self.observations = observations
        }

        /// Whether a death bounds it (an upper bound is known).
        public var isBounded: Bool { atMost != nil }
    }

    /// How long a session lives without use.
    public var idle: Bounds
    /// How long a session lives after its login, however it is used.
    public var lifetime: Bounds
    /// How many times a death earlier than the bounds allowed made the daemon learn again (the site changed).
    public var relearned: Int

    public init(idle: Bounds = Bounds(), lifetime: Bounds = Bounds(), relearned: Int = 0) {
        self.idle = idle
        self.lifetime = lifetime
        self.relearned = relearned
    }

    /// Nothing learned yet.
    public var isEmpty: Bool { self == LearnedLifetimes() }

    /// The same bounds as far as storing them goes: the same deaths found, and the longest survived within
    /// ``storedPrecision`` of each other. An age seen alive grows at every check of a site whose sessions never
    /// die of age; it is written again when it grew by that much, not at every check (the counts ride along).
    public func sameBounds(as other: LearnedLifetimes) -> Bool {
        idle.atMost == other.idle.atMost && lifetime.atMost == other.lifetime.atMost && relearned == other.relearned
            && Self.close(idle.atLeast, other.idle.atLeast) && Self.close(lifetime.atLeast, other.lifetime.atLeast)
    }

    /// How far apart two longest-survived values may be and still count as the same bound: 10 %.
    public static let storedPrecision = 0.1

    private static func close(_ a: Double, _ b: Double) -> Bool {
        a == b || abs(a - b) <= storedPrecision * max(a, b)
    }
}

extension LearnedLifetimes: Codable {
    /// `{"idle":{"alive_s":15,"dead_s":20,"observations":4},"lifetime":{...},"relearned":0}` (seconds).
    enum CodingKeys: String, CodingKey { case idle, lifetime, relearned }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        idle = try container.decode(Bounds.self, forKey: .idle)
        lifetime = try container.decode(Bounds.self, forKey: .lifetime)
        relearned = try container.decodeIfPresent(Int.self, forKey: .relearned) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(idle, forKey: .idle)
        try container.encode(lifetime, forKey: .lifetime)
        try container.encode(relearned, forKey: .relearned)
    }
}

extension LearnedLifetimes.Bounds: Codable {
    enum CodingKeys: String, CodingKey {
        case atLeast = "alive_s"
        case atMost = "dead_s"
        case observations
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        atLeast = try container.decode(Double.self, forKey: .atLeast)
        atMost = try container.decodeIfPresent(Double.self, forKey: .atMost)
        observations = try container.decode(Int.self, forKey: .observations)
        guard atLeast.isFinite, atLeast >= 0, atMost.map({ $0.isFinite && $0 > 0 }) ?? true, observations >= 0 else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "bounds out of range"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(atLeast, forKey: .atLeast)
        // Written as null rather than left out: "never found dead" is a value, not a missing key.
        try container.encode(atMost, forKey: .atMost)
        try container.encode(observations, forKey: .observations)
    }
}
