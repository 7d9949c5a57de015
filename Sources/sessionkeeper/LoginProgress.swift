import Foundation
import CookieJar
import LoginFlow
import Sessions
import Synchronization

/// What `sessionkeeper login` shows on standard error while the flow runs: each request as it happens
/// (method, URL without its query, status, milliseconds), warnings, and with `--verbose` step timings,
/// plugin output and what was restored and stored. On a terminal the current step is also shown as a
/// progress line that is rewritten in place.
///
/// Every text comes from ``FlowEvent``s (already redacted by the engine) or from cookie names and times:
/// nothing here ever sees a credential, and cookie values are never formatted.
final class LoginProgress: Sendable {
    let verbose: Bool
    let terminal: Bool
    /// The progress line currently on screen (terminal only), so a request line can be printed above it.
    private let statusLine = Mutex<String?>(nil)

    init(verbose: Bool, terminal: Bool) {
        self.verbose = verbose
        self.terminal = terminal
    }

    /// The observer handed to the flow engine.
    var observer: FlowObserver {
        { [self] event in handle(event) }
    }

    private func handle(_ event: FlowEvent) {
        switch event {
        case .warning(_, let message):
            line("sessionkeeper: warning: \(message)")
        case .stepStarted(_, let step, let index, let count):
            let text = "[\(index)/\(count)] \(step)"
            if terminal {
                showStatus(text + " …")
            } else {
                line(text)
            }
        case .exchange(let exchange):
            let hop = exchange.redirectHop > 0 ? "  ↳ " : "  "
            line("\(hop)\(exchange.method) \(exchange.url) \(exchange.status) \(exchange.milliseconds) ms")
        case .pluginOutput(_, let step, let text):
            if verbose { line("  [\(step)] \(text)") }
        case .stepFinished(_, let timing):
            if verbose {
                let requests = timing.requests == 1 ? "1 request" : "\(timing.requests) requests"
                line("  step '\(timing.step)' done in \(Self.milliseconds(timing.duration)) ms (\(requests))")
            }
        }
    }

    /// The sink handed to ``SiteLogin``: flow events as above, and what was restored and stored.
    var sink: SessionEventSink {
        { [self] event in handle(event) }
    }

    private func handle(_ event: SessionEvent) {
        switch event {
        case .flow(let flowEvent):
            handle(flowEvent)
        case .restored(_, let names, let leftOut, let lastLogin):
            note("restored \(names.count) cookie(s) from the vault" + (names.isEmpty ? "" : " (\(names.joined(separator: ", ")))")
                + (leftOut > 0 ? "; left out \(leftOut) by cookies.keep_on_login" : "")
                + ", last login \(CookieTime.rfc3339(lastLogin))")
        case .startingEmpty(let site, .nothingStored):
            note("no stored session for \(site) in the vault")
        case .startingEmpty(_, .fresh):
            note("starting with an empty jar (--fresh)")
        case .startingEmpty(_, .keepNone):
            note("starting with an empty jar (cookies.keep_on_login: none)")
        case .restoreFailed(_, let problem):
            warn("cannot read the stored session, logging in from an empty jar: \(problem)")
        case .stored(_, let names, let leftOut):
            note("stored \(names.count) cookie(s) in the vault (\(names.joined(separator: ", ")))"
                + (leftOut > 0 ? "; left out \(leftOut) expired or session cookie(s)" : ""))
        case .outputWritten(_, let path, let count):
            note("wrote \(count) cookie(s) to \(path) (outputs:)")
        case .outputFailed(_, let path, let problem):
            warn("cannot write the output file \(path): \(problem)")
        }
    }

    /// A line only `--verbose` shows.
    func note(_ text: String) {
        if verbose { line(text) }
    }

    /// A line always shown (warnings).
    func warn(_ text: String) {
        line("sessionkeeper: warning: \(text)")
    }

    /// A credential command's standard error line (its own output already masked by the resolver).
    func credentialOutput(site: String, credential: String, line text: String) {
        if verbose { line("  [credential \(credential)] \(text)") }
    }

    /// Removes the progress line, if any, before the final output.
    func finish() {
        statusLine.withLock { current in
            if terminal && current != nil { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            current = nil
        }
    }

    /// Prints a line above the progress line (which is redrawn after it).
    private func line(_ text: String) {
        statusLine.withLock { current in
            if terminal, let current {
                FileHandle.standardError.write(Data("\r\u{1B}[K\(text)\n\(current)".utf8))
            } else {
                FileHandle.standardError.write(Data("\(text)\n".utf8))
            }
        }
    }

    private func showStatus(_ text: String) {
        statusLine.withLock { current in
            current = text
            FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
