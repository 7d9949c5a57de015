import Daemon
import Foundation

/// How long an answer ``CookieFastPath`` made to `GET /v1/sites/NAME/cookies` stays the answer it would make
/// again, so that ``WireReplay`` may send its bytes once more for the same request.
struct AnswerValidity {
    var site: String
    /// The board publication the answer was made from (``ServedSession/generation``).
    var generation: UInt64
    /// The request's `min_valid`.
    var minValid: Duration?
    /// The publication's session is fit for a request at `t` exactly when `t + min_valid` is before this
    /// (``ServedSession/fitUntil``).
    var fitUntil: Date
    /// When the answer's body may next change: a cookie in it expires (nil: none does).
    var changesAt: Date?
    /// The answer's `Date` field, in whole seconds since 1970 (RFC 9110 section 6.6.1).
    var dateSecond: Int

    /// Whether the answer made then is the answer now: the board holds the same publication of the site,
    /// the session is still fit for the request's `min_valid`, none of the answer's cookies has expired, and
    /// its `Date` field still names the current second.
    func holds(on board: ServedBoard, now: Date, second: Int) -> Bool {
        second == dateSecond && ServedSession.isFit(until: fitUntil, at: now, minValid: minValid) && changesAt.map { now < $0 } ?? true
            && board.generation(of: site) == generation
    }
}
