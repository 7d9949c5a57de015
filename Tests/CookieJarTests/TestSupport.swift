import Foundation
import Locking
@testable import CookieJar

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current: Locked<Date>

    init(_ start: Date = Fixtures.suiteNow) { current = Locked(start) }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    var function: @Sendable () -> Date { { [self] in self.now } }
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
