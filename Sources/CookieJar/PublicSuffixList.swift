internal import CPSL
import Locking

/// The Public Suffix List through libpsl. RFC 6265 section 5.3 step 5 asks user agents to refuse cookies
/// whose Domain attribute is a public suffix ("co.uk"), which would otherwise go to every site under it.
///
/// The list is loaded once: the distribution's latest list file when there is one (`psl_latest`), else the
/// list compiled into libpsl (`psl_builtin`).
final class PublicSuffixList: @unchecked Sendable {
    // @unchecked: libpsl contexts are immutable after loading and its lookups are re-entrant.
    /// nil only when libpsl was built without any list; then every single-label domain counts as a public
    /// suffix (the list's implicit "*" rule), which is the safe side.
    private let context: OpaquePointer?
    private let owned: Bool

    /// The process-wide list.
    static let shared = PublicSuffixList()

    private init() {
        if let latest = psl_latest(nil) {
            context = latest
            owned = true
        } else {
            context = psl_builtin()
            owned = false
        }
    }

    deinit {
        if owned, let context { psl_free(context) }
    }

    /// True when `domain` (lower case, no leading dot) is a public suffix, unknown top-level labels included
    /// (the list's implicit "*" rule), as browsers treat them.
    func isPublicSuffix(_ domain: String) -> Bool {
        if let known = answers.withLock({ $0[domain] }) { return known }
        let answer: Bool
        if let context {
            answer = psl_is_public_suffix(context, domain) != 0
        } else {
            answer = !domain.utf8.contains(0x2E)
        }
        answers.withLock { cache in
            if cache.count >= Self.maxCachedAnswers { cache.removeAll(keepingCapacity: true) }
            cache[domain] = answer
        }
        return answer
    }

    /// libpsl answers in about half a microsecond, a dictionary in a tenth of that, and cookie domains repeat:
    /// recent answers are remembered, up to this many before the memory starts over.
    static let maxCachedAnswers = 4096
    private let answers = Locked<[String: Bool]>([:])

    /// The registrable domain ("eTLD+1") of a host: `www.example.co.uk` → `example.co.uk`. An IP address, or
    /// a host that is itself a public suffix, is its own registrable domain.
    func registrableDomain(of host: String) -> String {
        if CookieRules.isIPAddress(host) { return host }
        guard let context else { return host }
        return host.withCString { argument in
            // libpsl answers with a pointer into its argument (the registrable domain is a suffix of the host):
            // it is read while the argument lives. Passing `host` straight in would hand libpsl a temporary C
            // string that is freed when the call returns, before the answer is read (found by fuzzing).
            guard let result = psl_registrable_domain(context, argument) else { return host }
            return String(cString: result)
        }
    }
}
