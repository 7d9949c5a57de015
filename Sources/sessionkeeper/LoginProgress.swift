import Foundation
import CookieJar
import Locking
import LoginFlow
import Platform
import Sessions

/// What `sessionkeeper login` shows on standard error while the flow runs: each request as it happens
/// (method, URL without its query, status, milliseconds), warnings, and with `--verbose` step timings,
/// plugin output and what was restored and stored. On a terminal the current step is also shown as a
/// progress line that is rewritten in place.
///
/// Every text comes from ``FlowEvent``s (already redacted by the engine) or from cookie names and times:
/// nothing here ever sees a credential, and cookie values are never formatted.
final class LoginProgress: Sendable {
    /// 0: requests and warnings; 1 (`-v`): also steps, plugin output, restored and stored cookies;
    /// 2 (`-vv`): also headers, cookie decisions, the start of each body and the JSON exchanged with plugins.
    let verbosity: Int
    var verbose: Bool { verbosity >= 1 }
    let terminal: Bool
    /// The progress line currently on screen (terminal only), so a request line can be printed above it.
    private let statusLine = Locked<String?>(nil)

    init(verbosity: Int, terminal: Bool) {
        self.verbosity = verbosity
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
        case .notice(_, let step, let message):
            if verbose { line("  [\(step)] \(message)") }
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
            // -v: the query's parameter names (steps on one script differ only there); -vv: the query, masked.
            if let query = exchange.maskedQuery, verbosity >= 2 {
                line("    query: \(query)")
            } else if verbose, !exchange.queryNames.isEmpty {
                line("    query parameters: \(exchange.queryNames.joined(separator: ", "))")
            }
        case .pluginOutput(_, let step, let text):
            if verbose { line("  [\(step)] \(text)") }
        case .requestTrace(let trace):
            for text in Self.lines(trace, marker: ">") { line(text) }
        case .responseTrace(let trace):
            for text in Self.lines(trace, marker: "<") { line(text) }
        case .pluginTrace(let trace):
            line("    \(trace.direction == .input ? "> plugin stdin" : "< plugin stdout"): \(trace.json)")
        case .cookieTrace(let trace):
            let name = trace.name ?? "(unnamed)"
            let scope = trace.scope.map { " for \($0)" } ?? ""
            switch trace.outcome {
            case .stored: line("    * cookie \(name) stored\(scope)")
            case .refused(let reason): line("    * cookie \(name) refused: \(reason)")
            case .evicted(let reason): line("    * cookie \(name)\(scope) removed: \(reason)")
            }
        case .stepSkipped(_, let step, let index, let count, let reason):
            if verbose { line("[\(index)/\(count)] \(step): skipped, the previous response does not meet its \(reason)") }
        case .loginDone(_, let step, let stepsLeft):
            if verbose {
                line("  step '\(step)' reached what login.done_when describes: the login ends here"
                    + (stepsLeft > 0 ? " (\(stepsLeft) later step(s) not run)" : ""))
            }
        case .stepFinished(_, let timing):
            if verbose {
                let requests = timing.requests == 1 ? "1 request" : "\(timing.requests) requests"
                line("  step '\(timing.step)' done in \(timing.duration.wholeMilliseconds) ms (\(requests))")
                if !timing.cookiesSet.isEmpty { line("  step '\(timing.step)' set cookies: \(timing.cookiesSet.joined(separator: ", "))") }
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
            if terminal && current != nil { Console.errRaw("\r\u{1B}[K") }
            current = nil
        }
    }

    /// Prints a line above the progress line (which is redrawn after it).
    private func line(_ text: String) {
        statusLine.withLock { current in
            if terminal, let current {
                Console.errRaw("\r\u{1B}[K\(text)\n\(current)")
            } else {
                Console.errRaw("\(text)\n")
            }
        }
    }

    private func showStatus(_ text: String) {
        statusLine.withLock { current in
            current = text
            Console.errRaw("\r\u{1B}[K\(text)")
        }
    }

    /// A request (`>`) or response (`<`) as curl -v shows it: first line, headers, then the start of the body.
    static func lines(_ trace: FlowEvent.Trace, marker: String) -> [String] {
        var lines = [trace.status == 0 ? "    \(marker) \(trace.method) \(trace.url)" : "    \(marker) \(trace.status) \(trace.url)"]
        for header in trace.headers { lines.append("    \(marker) \(header.name): \(header.value)") }
        if trace.bodyLength > 0 {
            lines.append("    \(marker) [body, \(trace.bodyLength) bytes]")
            let cleaned = trace.bodyStart.unicodeScalars.map { $0 == "\n" || $0 == "\t" || $0.value >= 0x20 && $0.value != 0x7F ? String($0) : "." }.joined()
            for bodyLine in cleaned.split(separator: "\n", omittingEmptySubsequences: false).prefix(20) {
                lines.append("    \(marker)   \(bodyLine)")
            }
        }
        return lines
    }

}
