import Foundation
import Locking
import Logging
import Platform

/// The audit line of one proxied request (SPEC section 10): who sent it (peer uid and pid), to which site,
/// the method and the path without its query, the status, the bytes each way, the time it took and whether a
/// login happened for it. Never a header value, a query or a body: a query may carry a token.
///
/// Filled as the request goes (the request body's bytes are counted as they stream to the site, the answer's
/// as they stream to the client) and written once, when the answer has ended or failed.
final class AuditRecord: Sendable {
    private struct Counts {
        var up = 0
        var down = 0
        var loggedIn = false
        var written = false
    }

    let peer: PeerCredentials
    let site: String
    let method: String
    let path: String
    let started: ContinuousClock.Instant
    private let counts = Locked(Counts())

    init(peer: PeerCredentials, site: String, method: String, path: String, started: ContinuousClock.Instant = .now) {
        self.peer = peer
        self.site = site
        self.method = method
        self.path = path
        self.started = started
    }

    func addUp(_ bytes: Int) { counts.withLock { $0.up += bytes } }
    func addDown(_ bytes: Int) { counts.withLock { $0.down += bytes } }
    /// The Keeper's login served this request (it waited for one, or a renewed session was at hand).
    func markLoggedIn() { counts.withLock { $0.loggedIn = true } }

    /// Writes the line at `info`, once; `status` nil when the site gave no answer. `failure` says why the
    /// exchange did not end well (an error kind, never a value).
    func finish(status: Int?, logger: Logger, failure: String? = nil) {
        let counts = counts.withLock { counts -> Counts? in
            guard !counts.written else { return nil }
            counts.written = true
            return counts
        }
        guard let counts else { return }
        let elapsed = ContinuousClock.now - started
        // Built only when the line is written (swift-log takes the metadata as an autoclosure).
        logger.info("egress", metadata: metadata(status: status, counts: counts, elapsed: elapsed, failure: failure))
    }

    private func metadata(status: Int?, counts: Counts, elapsed: Duration, failure: String?) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "uid": "\(peer.uid)", "pid": peer.pid > 0 ? "\(peer.pid)" : "-", "site": "\(site)", "method": "\(method)", "path": "\(path)",
            "status": "\(status.map(String.init) ?? "-")", "bytes_up": "\(counts.up)", "bytes_down": "\(counts.down)",
            "ms": "\(String(format: "%.3f", Double(elapsed / .microseconds(1)) / 1000))", "login": "\(counts.loggedIn ? "yes" : "no")",
        ]
        if let failure { metadata["failure"] = "\(failure)" }
        return metadata
    }
}
