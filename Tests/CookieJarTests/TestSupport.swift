import Foundation
import TestSupport
@testable import CookieJar

/// The clock the jar's tests move by hand, starting at the suite's fixed time.
typealias TestClock = ManualWallClock

extension ManualWallClock {
    convenience init() { self.init(Fixtures.suiteNow) }
}

func url(_ text: String) -> URL { URL(string: text)! }

extension CookieStorage {
    /// Stores headers received from `from` and returns the decisions.
    @discardableResult
    func receive(_ headers: String..., from source: String) -> [CookieDecision] {
        setCookies(fromHeaders: headers, for: url(source), mainDocumentURL: nil)
    }

    func names(for target: String) -> [String] { cookies(for: url(target)).map(\.name) }
}

extension CookieDecision {
    var isStored: Bool { if case .stored = self { true } else { false } }

    var reason: String? { if case .rejected(_, let reason) = self { reason } else { nil } }
}
