import Foundation
import Locking

/// The change events of one storage call, gathered under the lock and published to subscribers after it
/// (not gathered at all without subscribers). Not a log: it lives only for the call.
struct PendingChanges {
    var enabled: Bool
    var items: [CookieChange] = []

    mutating func append(_ change: @autoclosure () -> CookieChange) {
        if enabled { items.append(change()) }
    }
}

/// A thread-safe cookie jar with the API of NSHTTPCookieStorage, following RFC 6265 sections 5.3 (storage)
/// and 5.4 (retrieval) and the RFC 6265bis additions.
///
/// Cookies are indexed by their domain field, so a lookup visits only the buckets of the request host and
/// its parent domains, never the whole jar.
public final class CookieStorage: Sendable {
    /// The limits this storage enforces.
    public let limits: CookieLimits
    private let clock: @Sendable () -> Date
    private let state: Locked<State>

    struct Entry {
        var cookie: Cookie
        /// Order of first storage, the tie-break after creation time (cookies of one response share it).
        var sequence: UInt64
        /// Restored from a file the user named (``CookieStorage/restore(_:)``): never evicted, and kept by
        /// a server's replacement of the cookie.
        var pinned = false

        /// Eviction may take it: it was not restored from a file, or it has expired.
        func isEvictable(at now: Date) -> Bool { !pinned || cookie.isExpired(at: now) }
    }

    struct State {
        var acceptPolicy: CookieAcceptPolicy
        var buckets: [String: [Entry]] = [:]
        var count = 0
        var nextSequence: UInt64 = 0
        /// For each name, the domains holding Secure cookies of that name (and how many), so the 6265bis
        /// overlay check looks at those few domains only.
        var secureNames: [String: [String: Int]] = [:]
        var subscribers: [Int: AsyncStream<CookieChange>.Continuation] = [:]
        /// The changes gathered for each ``CookieStorage/recordingChanges(_:)`` call in progress.
        var recordings: [Int: [CookieChange]] = [:]
        var nextSubscriber = 0
        /// The origin of the last URL a call was given: clients ask about one URL several times in a row (its
        /// Cookie header, then the response's Set-Cookie headers, then a cookie by name), and comparing URLs
        /// costs less than Foundation's host, scheme and path getters. It holds no cookie data.
        var lastOrigin: RequestOrigin?

        /// Whether anyone listens to changes (a subscriber or a recording): if not, none is gathered.
        var isObserved: Bool { !subscribers.isEmpty || !recordings.isEmpty }

        /// The position of `domain`'s bucket. A small jar (a login's holds one or two domains) is searched by
        /// comparing keys, which costs less than hashing the domain; a larger one by hash.
        func bucketPosition(of domain: String) -> Dictionary<String, [Entry]>.Index? {
            guard buckets.count <= 4 else { return buckets.index(forKey: domain) }
            var position = buckets.startIndex
            while position != buckets.endIndex {
                if buckets.keys[position] == domain { return position }
                buckets.formIndex(after: &position)
            }
            return nil
        }

        /// The origin of `url`, from `lastOrigin` when the URL is the same; nil when the URL has no host.
        mutating func origin(of url: URL) -> RequestOrigin? {
            if let lastOrigin, lastOrigin.url == url { return lastOrigin }
            guard let origin = RequestOrigin(url, resolvingPath: true) else { return nil }
            lastOrigin = origin
            return origin
        }
    }

    /// Creates an empty storage.
    /// - Parameters:
    ///   - acceptPolicy: which cookies responses may set.
    ///   - limits: size and count limits (RFC 6265 section 6.1 minimums by default).
    ///   - clock: the current time; tests inject a fixed one.
    public init(acceptPolicy: CookieAcceptPolicy = .always, limits: CookieLimits = CookieLimits(),
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.limits = limits
        self.clock = clock
        self.state = Locked(State(acceptPolicy: acceptPolicy))
    }

    deinit {
        let subscribers = state.withLock { $0.subscribers.values }
        for continuation in subscribers { continuation.finish() }
    }

    /// Which cookies responses may set.
    public var acceptPolicy: CookieAcceptPolicy {
        get { state.withLock { $0.acceptPolicy } }
        set { state.withLock { $0.acceptPolicy = newValue } }
    }

    // MARK: Storing

    /// Stores one cookie as given (no origin rules: the caller vouches for it), replacing the cookie with the
    /// same name, domain and path while keeping its creation time. Ignored under the `never` policy, when over
    /// the size limit, or when already expired (which deletes the cookie it would replace).
    public func setCookie(_ cookie: Cookie) {
        let now = clock()
        let events = state.withLock { state -> PendingChanges in
            guard state.acceptPolicy != .never else { return PendingChanges(enabled: false) }
            var events = PendingChanges(enabled: state.isObserved)
            var cookie = cookie
            _ = store(&cookie, now: now, secureOrigin: true, state: &state, events: &events)
            return events
        }
        publish(events)
    }

    /// Puts cookies read from a file the user named into the storage exactly as they are, in order: no
    /// accept policy, no limits, expired ones included until removed, each replacing a stored cookie with
    /// the same name, domain and path. They are never evicted afterwards (SPEC section 4: a user's file is
    /// not the jar's to trim): a new cookie that finds its domain, or the jar, full of them is refused.
    public func restore(_ cookies: [Cookie]) {
        let events = state.withLock { state -> PendingChanges in
            var events = PendingChanges(enabled: state.isObserved)
            for cookie in cookies {
                if let position = state.bucketPosition(of: cookie.domain),
                   let index = state.buckets.values[position].firstIndex(where: { $0.cookie.key == cookie.key }) {
                    let old = state.buckets.values[position][index].cookie
                    if old.secure { Self.forgetSecure(old, state: &state) }
                    state.buckets.values[position][index].cookie = cookie
                    state.buckets.values[position][index].pinned = true
                    events.append(.updated(old: old, new: cookie))
                } else {
                    let entry = Entry(cookie: cookie, sequence: state.nextSequence, pinned: true)
                    if let position = state.bucketPosition(of: cookie.domain) {
                        state.buckets.values[position].append(entry)
                    } else {
                        state.buckets[cookie.domain] = [entry]
                    }
                    state.nextSequence += 1
                    state.count += 1
                    events.append(.added(cookie))
                }
                if cookie.secure { state.secureNames[cookie.name, default: [:]][cookie.domain, default: 0] += 1 }
            }
            return events
        }
        publish(events)
    }

    /// Runs `body` and returns its result with every change made while it ran, in order (including changes
    /// other threads made meanwhile): the synchronous counterpart of ``changes()``, for a caller that
    /// reports what one operation did, such as `jar store --verbose`.
    public func recordingChanges<T>(_ body: () -> T) -> (result: T, changes: [CookieChange]) {
        let id = state.withLock { state in
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.recordings[id] = []
            return id
        }
        let result = body()
        let changes = state.withLock { $0.recordings.removeValue(forKey: id) ?? [] }
        return (result, changes)
    }

    /// Stores cookies made elsewhere (a login plugin's answer, an import) under the storage's accept policy,
    /// in order, and says what happened to each: the `main-document-domain` policy measures them against
    /// `mainDocumentURL`'s registrable domain, and the limits and the Secure-overlay rule apply as for a
    /// response. Unlike ``setCookie(_:)``, nothing bypasses the policy.
    @discardableResult
    public func setCookies(_ cookies: [Cookie], mainDocumentURL: URL?) -> [CookieDecision] {
        let now = clock()
        var decisions: [CookieDecision] = []
        decisions.reserveCapacity(cookies.count)
        let events = state.withLock { state -> PendingChanges in
            var events = PendingChanges(enabled: state.isObserved)
            var registrableDomain: String??
            for made in cookies {
                var cookie = made
                decisions.append(admit(
                    &cookie, secureOrigin: true, mainDocumentHost: mainDocumentURL.flatMap(CookieRules.canonicalHost(of:)),
                    registrableDomain: &registrableDomain, now: now, state: &state, events: &events))
            }
            return events
        }
        publish(events)
        return decisions
    }

    /// Stores the cookies of a response from `url` (RFC 6265 section 5.2 parsing, 5.3 storage model), in
    /// header order, and says what happened to each.
    /// - Parameters:
    ///   - setCookieValues: the values of the response's `Set-Cookie` header fields.
    ///   - url: the request URL the response answered.
    ///   - mainDocumentURL: the top-level document's URL, for the `main-document-domain` policy; nil means `url`.
    @discardableResult
    public func setCookies(fromHeaders setCookieValues: [String], for url: URL, mainDocumentURL: URL?) -> [CookieDecision] {
        let now = clock()
        // Parsing needs neither the origin nor the jar: a response's headers are parsed before taking the lock,
        // so a long response does not hold it. A single header (clients mostly hand over one per call) is parsed
        // where it is decided, which spares an array and the copies of its parse result.
        let parsed = setCookieValues.count > 1 ? setCookieValues.map(SetCookieParser.parse) : nil
        var decisions: [CookieDecision] = []
        decisions.reserveCapacity(setCookieValues.count)
        // One lock per call: the origin (the storage's last one when the URL is the same), then each header's
        // fate in header order.
        let events = state.withLock { state -> PendingChanges in
            guard let origin = state.origin(of: url) else {
                for header in setCookieValues {
                    decisions.append(.rejected(name: Self.nameForReport(header), reason: CookieRejection.noHost.description))
                }
                return PendingChanges(enabled: false)
            }
            var events = PendingChanges(enabled: state.isObserved)
            // Only the main-document-domain policy needs the registrable domain; worked out at most once.
            var registrableDomain: String??
            for index in setCookieValues.indices {
                let header = setCookieValues[index]
                decisions.append(decide(
                    header, parsed?[index] ?? SetCookieParser.parse(header), origin: origin, now: now, mainDocumentURL: mainDocumentURL,
                    registrableDomain: &registrableDomain, state: &state, events: &events))
            }
            return events
        }
        publish(events)
        return decisions
    }

    /// One Set-Cookie header's fate: the RFC 6265 section 5.3 rules for the origin, the accept policy, then
    /// the storage rules.
    private func decide(
        _ header: String, _ parsed: consuming Result<ParsedSetCookie, SetCookieParseFailure>, origin: RequestOrigin, now: Date,
        mainDocumentURL: URL?, registrableDomain: inout String??, state: inout State, events: inout PendingChanges
    ) -> CookieDecision {
        // Consumed down to the stored cookie: the parsed name, value and path move into it, not copied.
        let made: Result<Cookie, CookieRejection>
        switch consume parsed {
        case .failure(let failure): made = .failure(.parse(failure))
        case .success(var parsed): made = CookieRules.makeCookie(from: &parsed, origin: origin, now: now)
        }
        switch consume made {
        case .failure(let rejection):
            return .rejected(name: Self.nameForReport(header), reason: rejection.description)
        case .success(var cookie):
            return admit(
                &cookie, secureOrigin: origin.isSecure,
                mainDocumentHost: mainDocumentURL.map(CookieRules.canonicalHost(of:)) ?? origin.host,
                registrableDomain: &registrableDomain, now: now, state: &state, events: &events)
        }
    }

    /// A made cookie's fate, for a response's cookies and for cookies made elsewhere alike: the accept
    /// policy, then the storage rules. The registrable domain of `mainDocumentHost` is worked out at most once
    /// per call (kept in `registrableDomain`), and only under `main-document-domain`.
    private func admit(
        _ cookie: inout Cookie, secureOrigin: Bool, mainDocumentHost: @autoclosure () -> String?,
        registrableDomain: inout String??, now: Date, state: inout State, events: inout PendingChanges
    ) -> CookieDecision {
        if state.acceptPolicy != .always {
            if state.acceptPolicy == .mainDocumentDomain, registrableDomain == nil {
                registrableDomain = .some(mainDocumentHost().map(PublicSuffixList.shared.registrableDomain(of:)))
            }
            if let rejection = Self.policyRejection(cookie, policy: state.acceptPolicy, registrableDomain: registrableDomain ?? nil) {
                return .rejected(name: cookie.name, reason: rejection.description)
            }
        }
        // The cookie is stored and reported in place (large enums of a Cookie cost a copy at each step).
        if let rejection = store(&cookie, now: now, secureOrigin: secureOrigin, state: &state, events: &events) {
            return .rejected(name: cookie.name, reason: rejection.description)
        }
        return .stored(cookie)
    }

    /// The name part of a header the parser refused, for reports; nil when there is none. Never the value.
    /// What the storage answers for a Set-Cookie header whose bytes were not UTF-8 (a transport that had
    /// to decode them some other way says so): refused, never stored as other bytes (RFC 6265bis section
    /// 5.6 leaves non-UTF-8 octets to the user agent; this jar keeps text exact or not at all).
    public static func refusedAsNotUTF8(_ header: String) -> CookieDecision {
        .rejected(name: nameForReport(header), reason: SetCookieParseFailure.notUTF8.description)
    }

    private static func nameForReport(_ header: String) -> String? {
        let pair = header.prefix { $0 != ";" }
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        guard !name.isEmpty, !Cookie.hasControl(name) else { return nil }
        return name
    }

    /// `registrableDomain` is the main document's (nil when it has none); only `mainDocumentDomain` reads it.
    private static func policyRejection(_ cookie: Cookie, policy: CookieAcceptPolicy, registrableDomain: String?) -> CookieRejection? {
        switch policy {
        case .always:
            return nil
        case .never:
            return .policyNever
        case .mainDocumentDomain:
            guard let registrableDomain else { return .outsideMainDocumentDomain(domain: cookie.domain, registrableDomain: "(none)") }
            if CookieRules.domainMatches(host: cookie.domain, domain: registrableDomain) { return nil }
            return .outsideMainDocumentDomain(domain: cookie.domain, registrableDomain: registrableDomain)
        }
    }

    /// RFC 6265 section 5.3 steps 11-12 plus the limits: the part of storage that depends on the jar's content.
    /// Returns why the cookie was not stored, or nil when `cookie` (its creation time kept from the cookie it
    /// replaced) is now in the jar.
    private func store(_ cookie: inout Cookie, now: Date, secureOrigin: Bool, state: inout State,
                       events: inout PendingChanges) -> CookieRejection? {
        guard cookie.nameValueByteCount <= limits.maxCookieBytes else { return .tooLarge(limit: limits.maxCookieBytes) }
        // RFC 6265bis 5.7 step 16: an insecure origin cannot overlay a Secure cookie with a non-secure one.
        if !cookie.secure, !secureOrigin, let domains = state.secureNames[cookie.name],
           Self.hasSecureCookieOverlaid(by: cookie, domains: domains.keys, in: state) {
            return .overlaysSecureCookie
        }
        // The bucket is found once and then mutated in place through the dictionary's values (the position
        // stays valid: nothing below inserts or removes a bucket before its last use).
        let position = state.bucketPosition(of: cookie.domain)
        // Field by field, name first (it differs most often), without building a CookieKey per entry.
        let existingIndex = position.flatMap { position in
            state.buckets.values[position].firstIndex {
                $0.cookie.name == cookie.name && $0.cookie.path == cookie.path && $0.cookie.domain == cookie.domain
            }
        }
        if cookie.isExpired(at: now) {
            // Step 12 of 6265bis / the RFC's eviction of expired cookies: the server deleted the cookie.
            if let position, let existingIndex {
                let removed = state.buckets.values[position].remove(at: existingIndex)
                Self.forget(removed.cookie, state: &state)
                if state.buckets.values[position].isEmpty { state.buckets.remove(at: position) }
                events.append(.removed(removed.cookie))
            }
            return .expiredOnArrival
        }
        let bucketCount: Int
        if let position, let existingIndex {
            // Step 11.3: the replacement keeps the old creation time (and so its place in the order).
            cookie.created = state.buckets.values[position][existingIndex].cookie.created
            let oldWasSecure = state.buckets.values[position][existingIndex].cookie.secure
            // The old cookie is copied out only for a subscriber's `.updated` event.
            let old = events.enabled ? state.buckets.values[position][existingIndex].cookie : nil
            state.buckets.values[position][existingIndex].cookie = cookie
            bucketCount = state.buckets.values[position].count
            // Same name and domain as the new cookie, so the secure-name index is updated with either.
            if oldWasSecure { Self.forgetSecure(cookie, state: &state) }
            if cookie.secure { state.secureNames[cookie.name, default: [:]][cookie.domain, default: 0] += 1 }
            if let old { events.append(.updated(old: old, new: cookie)) }
        } else {
            if let refusal = noRoom(for: cookie, position: position, now: now, state: state) { return refusal }
            let entry = Entry(cookie: cookie, sequence: state.nextSequence)
            if let position {
                state.buckets.values[position].append(entry)
                bucketCount = state.buckets.values[position].count
            } else {
                state.buckets[cookie.domain] = [entry]
                bucketCount = 1
            }
            state.nextSequence += 1
            state.count += 1
            if cookie.secure { state.secureNames[cookie.name, default: [:]][cookie.domain, default: 0] += 1 }
            events.append(.added(cookie))
        }
        enforceLimits(stored: cookie, bucketCount: bucketCount, now: now, state: &state, events: &events)
        return nil
    }

    /// RFC 6265bis 5.7 step 16 criteria: same name, Secure, domains domain-matching either way, and the new
    /// path path-matching the existing one.
    private static func hasSecureCookieOverlaid(by cookie: Cookie, domains: some Sequence<String>, in state: State) -> Bool {
        for domain in domains
        where CookieRules.domainMatches(host: domain, domain: cookie.domain) || CookieRules.domainMatches(host: cookie.domain, domain: domain) {
            for entry in state.buckets[domain] ?? [] where entry.cookie.secure && entry.cookie.name == cookie.name
                && CookieRules.pathMatches(requestPath: cookie.path, cookiePath: entry.cookie.path) {
                return true
            }
        }
        return false
    }

    private static func forget(_ cookie: Cookie, state: inout State) {
        state.count -= 1
        if cookie.secure { forgetSecure(cookie, state: &state) }
    }

    private static func forgetSecure(_ cookie: Cookie, state: inout State) {
        guard var domains = state.secureNames[cookie.name] else { return }
        let remaining = domains[cookie.domain, default: 1] - 1
        domains[cookie.domain] = remaining > 0 ? remaining : nil
        state.secureNames[cookie.name] = domains.isEmpty ? nil : domains
    }

    /// A new cookie that a full domain or a full jar has no room for, because everything that eviction could
    /// take was restored from a file (never evicted): the cookie is refused instead. Only a jar at a limit
    /// is scanned, and the scan stops at the first cookie eviction may take.
    private func noRoom(for cookie: Cookie, position: Dictionary<String, [Entry]>.Index?, now: Date, state: State) -> CookieRejection? {
        if let position, state.buckets.values[position].count >= limits.maxCookiesPerDomain,
           !state.buckets.values[position].contains(where: { $0.isEvictable(at: now) }) {
            return .domainFull(domain: cookie.domain, limit: limits.maxCookiesPerDomain)
        }
        if state.count >= limits.maxCookies, !state.buckets.values.contains(where: { $0.contains { $0.isEvictable(at: now) } }) {
            return .jarFull(limit: limits.maxCookies)
        }
        return nil
    }

    /// RFC 6265 section 5.3, after step 12, with RFC 6265bis section 5.7's order: over a limit, evict expired
    /// cookies first, then non-Secure cookies of domains over their limit, then any of those domains, then
    /// any cookie; within a rank the least recently accessed first (ties: the earliest stored). The per-domain
    /// limit evicts within the domain, the total across the jar. Never the cookie just stored, nor one
    /// restored from a file. `bucketCount` is how many cookies the domain's bucket holds now (its lookup is
    /// skipped under the limit).
    private func enforceLimits(stored: Cookie, bucketCount: Int, now: Date, state: inout State, events: inout PendingChanges) {
        let domain = stored.domain
        if bucketCount > limits.maxCookiesPerDomain, var bucket = state.buckets[domain] {
            let reason = CookieEviction.domainLimit(domain: domain, limit: limits.maxCookiesPerDomain)
            while bucket.count > limits.maxCookiesPerDomain,
                  let victim = Self.evictionVictim(in: bucket, crowded: true, sparing: stored, now: now)?.index {
                let removed = bucket.remove(at: victim)
                Self.forget(removed.cookie, state: &state)
                events.append(removed.cookie.isExpired(at: now) ? .expired(removed.cookie) : .evicted(removed.cookie, reason: reason))
            }
            state.buckets[domain] = bucket
        }
        let reason = CookieEviction.totalLimit(limit: limits.maxCookies)
        while state.count > limits.maxCookies {
            var best: (domain: String, index: Int, rank: EvictionRank)?
            for (bucketDomain, bucket) in state.buckets {
                let crowded = bucket.count > limits.maxCookiesPerDomain
                guard let candidate = Self.evictionVictim(in: bucket, crowded: crowded, sparing: stored, now: now) else { continue }
                if let current = best, !(candidate.rank < current.rank) { continue }
                best = (bucketDomain, candidate.index, candidate.rank)
            }
            guard let best, var bucket = state.buckets[best.domain] else { return }
            let removed = bucket.remove(at: best.index)
            Self.forget(removed.cookie, state: &state)
            state.buckets[best.domain] = bucket.isEmpty ? nil : bucket
            events.append(removed.cookie.isExpired(at: now) ? .expired(removed.cookie) : .evicted(removed.cookie, reason: reason))
        }
    }

    /// Eviction order, lowest first: the RFC 6265bis rank (0 expired, 1 non-Secure in a crowded domain,
    /// 2 crowded domain, 3 any), then last access, then storage order.
    struct EvictionRank: Comparable {
        var rank: Int
        var lastAccess: Date
        var sequence: UInt64

        static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.rank, lhs.lastAccess, lhs.sequence) < (rhs.rank, rhs.lastAccess, rhs.sequence)
        }
    }

    /// The bucket's first cookie in eviction order, sparing `stored` and cookies restored from a file;
    /// nil when eviction may take none of them. `crowded`: the bucket's domain is over its limit.
    private static func evictionVictim(in bucket: [Entry], crowded: Bool, sparing stored: Cookie, now: Date) -> (index: Int, rank: EvictionRank)? {
        var best: (index: Int, rank: EvictionRank)?
        for index in bucket.indices where bucket[index].isEvictable(at: now) {
            let cookie = bucket[index].cookie
            if cookie.name == stored.name, cookie.path == stored.path, cookie.domain == stored.domain { continue }
            let rank = cookie.isExpired(at: now) ? 0 : !crowded ? 3 : cookie.secure ? 2 : 1
            let candidate = EvictionRank(rank: rank, lastAccess: cookie.lastAccess, sequence: bucket[index].sequence)
            if let current = best, !(candidate < current.rank) { continue }
            best = (index, candidate)
        }
        return best
    }

    // MARK: Retrieving

    /// The cookies a request to `url` carries, in RFC 6265 section 5.4 order (longest path first, then earliest
    /// creation). This is the HTTP API: HttpOnly cookies are included. Their last-access time becomes now;
    /// expired cookies met on the way are dropped (and reported as `.expired`).
    public func cookies(for url: URL) -> [Cookie] {
        let now = clock()
        var expired: [Cookie] = []
        let found = state.withLock { state -> [Cookie] in
            guard let origin = state.origin(of: url) else { return [] }
            let lookup = Self.lookUp(origin, now: now, state: &state, expired: &expired)
            var found: [Cookie] = []
            found.reserveCapacity(lookup.matches.count)
            // Copied straight out of the bucket's storage (not through a copy of its Entry).
            for match in lookup.matches {
                state.buckets.values[match.bucket].withUnsafeBufferPointer { found.append($0[match.entry].cookie) }
            }
            if lookup.emptiedBucket { Self.removeEmptyBuckets(for: origin, state: &state) }
            return found
        }
        if !expired.isEmpty { publish(expired.map(CookieChange.expired)) }
        return found
    }

    /// The `Cookie` request header value for `url` (RFC 6265 section 5.4 step 4: `name=value` pairs joined by
    /// "; "), or nil when no cookie applies.
    public func cookieHeader(for url: URL) -> String? {
        let now = clock()
        var expired: [Cookie] = []
        // Written straight from the jar into one String of the right capacity: no Cookie copies, no array of
        // pairs (the same text as `CookieCodec.encode(cookies(for: url), as: .header)`).
        let header = state.withLock { state -> String? in
            guard let origin = state.origin(of: url) else { return nil }
            let lookup = Self.lookUp(origin, now: now, state: &state, expired: &expired)
            defer { if lookup.emptiedBucket { Self.removeEmptyBuckets(for: origin, state: &state) } }
            guard !lookup.matches.isEmpty else { return nil }
            // The cookies are read in place (a Cookie copied out would retain and release each of its fields).
            var length = 2 * (lookup.matches.count - 1)
            for match in lookup.matches {
                state.buckets.values[match.bucket].withUnsafeBufferPointer { entries in
                    length += entries[match.entry].cookie.name.utf8.count + 1 + entries[match.entry].cookie.value.utf8.count
                }
            }
            // The bytes are copied into the String's own storage (String.append checks capacity and uniqueness
            // each time); names and values are valid UTF-8 and the separators ASCII, so the text is exact.
            return String(unsafeUninitializedCapacity: length) { buffer in
                var offset = 0
                for (position, match) in lookup.matches.enumerated() {
                    state.buckets.values[match.bucket].withUnsafeBufferPointer { entries in
                        if position > 0 {
                            buffer[offset] = 0x3B  // ';'
                            buffer[offset + 1] = 0x20
                            offset += 2
                        }
                        offset = buffer[offset...].initialize(fromContentsOf: entries[match.entry].cookie.name.utf8)
                        buffer[offset] = 0x3D  // '='
                        offset = buffer[(offset + 1)...].initialize(fromContentsOf: entries[match.entry].cookie.value.utf8)
                    }
                }
                return offset
            }
        }
        if !expired.isEmpty { publish(expired.map(CookieChange.expired)) }
        return header
    }

    /// Where a cookie a request carries sits in the jar, and its RFC 6265 section 5.4 sort key.
    private struct Match {
        var bucket: Dictionary<String, [Entry]>.Index
        var entry: Int
        var pathLength: Int
        var created: Date
        var sequence: UInt64

        /// RFC 6265 section 5.4 step 2: longer paths first; equal paths, earlier creation first (then storage
        /// order). Sequences are unique, so this is a total order.
        func precedes(_ other: Match) -> Bool {
            if pathLength != other.pathLength { return pathLength > other.pathLength }
            if created != other.created { return created < other.created }
            return sequence < other.sequence
        }
    }

    /// Under the lock: the cookies a request to `origin` carries, in section 5.4 order, their last access set
    /// to `now`; expired cookies met on the way leave the jar and are appended to `expired`.
    /// The matches are positions in `state.buckets`, valid until a bucket is inserted or removed, so a bucket
    /// left empty stays until ``removeEmptyBuckets(for:state:)`` (`emptiedBucket` says whether to call it).
    private static func lookUp(_ origin: RequestOrigin, now: Date, state: inout State, expired: inout [Cookie])
        -> (matches: [Match], emptiedBucket: Bool) {
        var matches: [Match] = []
        var emptiedBucket = false
        let requestPath = origin.path
        // Each parent domain of the host is a bucket key; host-only cookies only match the host's own bucket.
        // The host itself is looked up as it is; the Substring walk and a String per parent domain are made
        // only for a host name (an IP address has no parent domains).
        var domain = origin.host
        var suffix: Substring?
        var isHostItself = true
        while true {
            // The bucket is found once per level, then mutated in place through the dictionary's values.
            if let position = state.bucketPosition(of: domain) {
                let expiredBefore = expired.count
                collect(
                    from: &state.buckets.values[position], position: position, origin: origin, requestPath: requestPath,
                    isHostItself: isHostItself, now: now, matches: &matches, expired: &expired)
                if expired.count > expiredBefore {
                    for cookie in expired[expiredBefore...] { forget(cookie, state: &state) }
                    if state.buckets.values[position].isEmpty { emptiedBucket = true }
                }
            }
            guard !origin.isIP else { break }
            var parent = suffix ?? Substring(origin.host)
            guard let dot = parent.firstIndex(of: ".") else { break }
            parent = parent[parent.index(after: dot)...]
            if parent.isEmpty { break }
            suffix = parent
            domain = String(parent)
            isHostItself = false
        }
        // Buckets keep storage order, so the matches are usually in order already (one path, one bucket).
        if matches.count > 1, !zip(matches, matches.dropFirst()).allSatisfy({ $0.precedes($1) }) {
            matches.sort { $0.precedes($1) }
        }
        return (matches, emptiedBucket)
    }

    /// Drops the buckets ``lookUp(_:now:state:expired:)`` left empty, on the same domains it visited.
    private static func removeEmptyBuckets(for origin: RequestOrigin, state: inout State) {
        var suffix = Substring(origin.host)
        while true {
            let domain = String(suffix)
            if state.buckets[domain]?.isEmpty == true { state.buckets[domain] = nil }
            guard !origin.isIP, let dot = suffix.firstIndex(of: ".") else { break }
            suffix = suffix[suffix.index(after: dot)...]
            if suffix.isEmpty { break }
        }
    }

    /// Scans one bucket in place: matching cookies get their last-access updated and are appended to
    /// `matches`; expired ones are removed and appended to `expired`. Removal only shifts the entries after
    /// the one removed, so the positions already in `matches` stay valid.
    private static func collect(
        from bucket: inout [Entry], position: Dictionary<String, [Entry]>.Index, origin: RequestOrigin, requestPath: String,
        isHostItself: Bool, now: Date, matches: inout [Match], expired: inout [Cookie]
    ) {
        // At most the whole bucket matches: one allocation, not one per doubling.
        matches.reserveCapacity(matches.count + bucket.count)
        var index = bucket.startIndex
        while index < bucket.endIndex {
            if bucket[index].cookie.isExpired(at: now) {
                expired.append(bucket.remove(at: index).cookie)
                continue
            }
            if isHostItself || !bucket[index].cookie.hostOnly, !bucket[index].cookie.secure || origin.isSecure,
               CookieRules.pathMatches(requestPath: requestPath, cookiePath: bucket[index].cookie.path) {
                bucket[index].cookie.lastAccess = now
                matches.append(Match(
                    bucket: position, entry: index, pathLength: bucket[index].cookie.path.utf8.count,
                    created: bucket[index].cookie.created, sequence: bucket[index].sequence))
            }
            index += 1
        }
    }

    /// Every stored cookie, expired ones included until removed, in creation order.
    public var allCookies: [Cookie] {
        let (inOrder, outOfOrder) = state.withLock { state -> ([Cookie], [Entry]) in
            var cookies: [Cookie] = []
            cookies.reserveCapacity(state.count)
            // A bucket keeps storage order, which is creation order unless a caller stored cookies with older
            // creation times: when the jar's cookies come out in order (one domain, as in a login), no sort.
            var last: (created: Date, sequence: UInt64)?
            for bucket in state.buckets.values {
                // Read in place: iterating the Entries would copy each one before its cookie is copied.
                let inOrder = bucket.withUnsafeBufferPointer { entries in
                    for index in entries.indices {
                        let key = (created: entries[index].cookie.created, sequence: entries[index].sequence)
                        if let previous = last, !(previous < key) { return false }
                        last = key
                        cookies.append(entries[index].cookie)
                    }
                    return true
                }
                if !inOrder { return ([], state.buckets.values.flatMap { $0 }) }
            }
            return (cookies, [])
        }
        // Sorted outside the lock.
        guard !outOfOrder.isEmpty else { return inOrder }
        return outOfOrder.sorted { ($0.cookie.created, $0.sequence) < ($1.cookie.created, $1.sequence) }.map(\.cookie)
    }

    // MARK: Removing

    /// Deletes the stored cookie with the same name, domain and path as `cookie`.
    public func deleteCookie(_ cookie: Cookie) {
        let key = cookie.key
        removeWhere(domains: [key.domain]) { $0.key == key }
    }

    /// Deletes the cookies named `name` that a request to `url` would carry (domain and path matching,
    /// whatever their Secure flag).
    public func deleteCookies(named name: String, for url: URL) {
        guard let host = CookieRules.canonicalHost(of: url) else { return }
        let path = CookieRules.requestPath(of: url)
        var domains = [host]
        if !CookieRules.isIPAddress(host) {
            var suffix = Substring(host)
            while let dot = suffix.firstIndex(of: ".") {
                suffix = suffix[suffix.index(after: dot)...]
                if !suffix.isEmpty { domains.append(String(suffix)) }
            }
        }
        removeWhere(domains: domains) { cookie in
            cookie.name == name && (cookie.domain == host || !cookie.hostOnly)
                && CookieRules.pathMatches(requestPath: path, cookiePath: cookie.path)
        }
    }

    /// Deletes the cookies created at or after `date`.
    public func removeCookies(since date: Date) {
        removeWhere(domains: nil) { $0.created >= date }
    }

    /// Deletes every cookie.
    public func removeAll() {
        removeWhere(domains: nil) { _ in true }
    }

    /// Drops the cookies whose expiry time has passed, reporting each as `.expired`.
    public func removeExpired() {
        let now = clock()
        removeWhere(domains: nil, event: CookieChange.expired) { $0.isExpired(at: now) }
    }

    private func removeWhere(domains: [String]?, event: (Cookie) -> CookieChange = CookieChange.removed,
                             _ shouldRemove: (Cookie) -> Bool) {
        let events = state.withLock { state -> PendingChanges in
            var events = PendingChanges(enabled: state.isObserved)
            for domain in domains ?? Array(state.buckets.keys) {
                guard let bucket = state.buckets[domain] else { continue }
                var kept: [Entry] = []
                kept.reserveCapacity(bucket.count)
                for entry in bucket {
                    if shouldRemove(entry.cookie) {
                        Self.forget(entry.cookie, state: &state)
                        events.append(event(entry.cookie))
                    } else {
                        kept.append(entry)
                    }
                }
                if kept.count != bucket.count { state.buckets[domain] = kept.isEmpty ? nil : kept }
            }
            return events
        }
        publish(events)
    }

    // MARK: Change events

    /// A new stream of every change from now on. The stream ends when the storage is deallocated; cancel the
    /// consuming task to unsubscribe.
    public func changes() -> AsyncStream<CookieChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: CookieChange.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Yields outside the lock so a subscriber's termination handler can never deadlock against it.
    private func publish(_ pending: PendingChanges) {
        // Nothing gathered (no subscriber, the usual case): not even the array's type metadata is needed.
        if !pending.items.isEmpty { publish(pending.items) }
    }

    private func publish(_ events: [CookieChange]) {
        guard !events.isEmpty else { return }
        let subscribers = state.withLock { state in
            for id in state.recordings.keys { state.recordings[id]?.append(contentsOf: events) }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers {
            for event in events { continuation.yield(event) }
        }
    }
}
