/// The values the vault crash test writes (Tests/VaultCrashWriter) and checks (Tests/VaultTests/CrashTests):
/// a header naming item and round, then filler of a size that varies with both (a few bytes to ~20 KB),
/// so torn or mixed writes cannot pass for valid ones.
public enum CrashTestValue {
    /// The value of `item` in `round`.
    public static func bytes(item: Int, round: Int) -> [UInt8] {
        let header = Array("item=\(item) round=\(round);".utf8)
        let size = (item * 7919 + round * 104_729) % 20_000
        return header + (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ item &* 31 &+ round) }
    }
}
