import Foundation
import Locking
import SiteConfig

/// The period numbers of the one-time codes sent for each site's credentials, so that no code is sent twice
/// (RFC 6238 section 5.2: a verifier must not accept a code a second time, and most do refuse it; a code the
/// site refused is refused again). Shared by every run of one login path: the daemon keeps one for its life,
/// and ``seed(site:counters:)`` takes in what a stored session says earlier processes sent.
public final class OneTimeCodeLedger: Sendable {
    private struct Key: Hashable {
        var site: String
        var credential: String
    }

    private let sent = Locked<[Key: Int64]>([:])

    public init() {}

    /// The latest period whose code was sent for credential `credential` of `site`.
    public func lastSent(site: String, credential: String) -> Int64? {
        sent.withLock { $0[Key(site: site, credential: credential)] }
    }

    /// Records that the code of period `counter` was sent (an earlier period never replaces a later one).
    public func recordSent(site: String, credential: String, counter: Int64) {
        sent.withLock { table in
            let key = Key(site: site, credential: credential)
            table[key] = max(counter, table[key] ?? counter)
        }
    }

    /// Every credential of `site` with the latest period sent for it.
    public func sentCounters(site: String) -> [String: Int64] {
        sent.withLock { table in
            var result: [String: Int64] = [:]
            for (key, counter) in table where key.site == site { result[key.credential] = counter }
            return result
        }
    }

    /// Takes in periods sent by another process (the stored session's record).
    public func seed(site: String, counters: [String: Int64]) {
        for (credential, counter) in counters { recordSent(site: site, credential: credential, counter: counter) }
    }
}

/// A one-time code a request carried: which credential, its period, and when it was computed.
struct SentOneTimeCode: Sendable {
    var credential: String
    var counter: Int64
    var period: Int64
    var computedAt: Date

    /// Whether a refusal of this code may be the period's end rather than a wrong code: the answer came in a later
    /// period, or the code was computed within ``FlowEngine/periodBoundaryMargin`` of its period's end (a site whose
    /// clock runs slightly ahead, allowing no drift, already checks against the next period).
    func nearBoundary(answeredAt: Date) -> Bool {
        if OneTimeCodeClock.counter(at: answeredAt, period: period) > counter { return true }
        let periodEnd = Double((counter + 1) * period)
        return periodEnd - computedAt.timeIntervalSince1970 < FlowEngine.periodBoundaryMargin
    }
}

/// RFC 6238 section 4.2: T = floor((unix time - T0) / X), with T0 = 0.
enum OneTimeCodeClock {
    static func counter(at date: Date, period: Int64) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(period)).rounded(.down))
    }

    /// Whole seconds of a period, at least one.
    static func seconds(_ period: Duration) -> Int64 { max(period.components.seconds, 1) }
}

extension FlowEngine {
    /// Seconds before a period's end within which a refused code is taken as refused for its timing (see
    /// ``SentOneTimeCode/nearBoundary(answeredAt:)``) and tried once more with the next period's code.
    static let periodBoundaryMargin: Double = 2

    /// Computes the one-time codes (TOTP) that the templates `visit` reports name, now, just before the request or
    /// plugin input carrying them is built (SPEC section 3). A period whose code was already sent for the site is
    /// never used again: the run waits for the next period (at most one period), and says so through `observer`.
    func stampOneTimeCodes(
        _ visit: ((String) -> Void) -> Void, step: String, mark: SourceMark?, state: inout RunState, observer: FlowObserver?
    ) async throws(FlowError) -> [SentOneTimeCode] {
        guard !state.oneTimeCodes.isEmpty else { return [] }
        var names: [String] = []
        visit { name in
            guard name.hasPrefix("credentials.") else { return }
            let credential = String(name.dropFirst("credentials.".count))
            if !names.contains(credential) { names.append(credential) }
        }
        return try await stampOneTimeCodes(names: names, step: step, mark: mark, state: &state, observer: observer)
    }

    /// ``stampOneTimeCodes(_:step:mark:state:observer:)`` for credentials named directly (a plugin's `credentials`).
    func stampOneTimeCodes(
        names: [String], step: String, mark: SourceMark?, state: inout RunState, observer: FlowObserver?
    ) async throws(FlowError) -> [SentOneTimeCode] {
        var stamped: [SentOneTimeCode] = []
        let site = state.site.name
        for name in names {
            guard let generator = state.oneTimeCodes[name] else { continue }
            let period = OneTimeCodeClock.seconds(generator.period)
            var date = now()
            var counter = OneTimeCodeClock.counter(at: date, period: period)
            var waits = 0
            while let last = oneTimeCodes.lastSent(site: site, credential: name), counter <= last {
                let wait = Double((last + 1) * period) - date.timeIntervalSince1970
                // More than a period away, or still not there after a few waits: the clock went back.
                guard wait <= Double(period) + 1, waits < 3 else {
                    throw FlowError(
                        kind: .credential, site: site, step: step, mark: mark,
                        detail: "credential '\(name)': the code of a later period was already sent (\(Int(wait.rounded(.up))) s "
                            + "from now); the clock went back? A code is never sent twice")
                }
                waits += 1
                if waits == 1 {
                    observer?(.notice(
                        site: site, step: step,
                        message: "waiting \(Int(wait.rounded(.up))) s for the next \(period) s period of '\(name)': "
                            + "this period's code was already sent, and sites refuse a code used twice"))
                }
                do {
                    // A few milliseconds past the boundary: the sleep's clock and the wall clock may differ slightly.
                    try await sleep(.milliseconds(Int64((wait * 1000).rounded(.up)) + 5))
                } catch {
                    throw FlowError(kind: .cancelled, site: site, step: step, detail: "the run was cancelled")
                }
                date = now()
                counter = OneTimeCodeClock.counter(at: date, period: period)
            }
            let code = generator.code(forCounter: counter)
            oneTimeCodes.recordSent(site: site, credential: name, counter: counter)
            state.credentials[name] = code
            state.masker.addSecret(code)
            stamped.append(SentOneTimeCode(credential: name, counter: counter, period: period, computedAt: date))
        }
        return stamped
    }
}
