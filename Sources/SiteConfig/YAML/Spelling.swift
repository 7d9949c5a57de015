/// "Did you mean" suggestions by edit distance.
public enum Spelling {
    /// The candidate closest to `word` (case-insensitive Levenshtein distance), when it is close:
    /// at most 1 edit for short words, 2 for words of 5+ characters, 3 for 9+; also a candidate that
    /// equals `word` with `_` and `-` swapped.
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let lowered = word.lowercased()
        let limit = lowered.count >= 9 ? 3 : lowered.count >= 5 ? 2 : 1
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let normalized = candidate.lowercased()
            if normalized.replacingUnderscores == lowered.replacingUnderscores { return candidate }
            let distance = editDistance(lowered, normalized)
            if distance <= limit, distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// Levenshtein distance over Unicode scalars, two rows of memory.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

extension String {
    fileprivate var replacingUnderscores: String {
        String(map { $0 == "-" ? "_" : $0 })
    }
}
