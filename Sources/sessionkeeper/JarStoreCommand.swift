import ArgumentParser
import CookieJar
import Foundation
import Sessions

/// `jar store FILE --url U [--now T] [--verbose] [SETCOOKIE...]`
struct JarStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Apply Set-Cookie header values received from a URL to a jar file (created if missing).",
        discussion: """
            With no SETCOOKIE arguments the values are read from standard input: one a line, or a response \
            header dump such as `curl -D -` writes (its Set-Cookie: lines are taken, every other line ignored). \
            A leading `Set-Cookie:` is understood everywhere. FILE '-' starts from an empty jar and writes it \
            to standard output. The jar keeps its format; its cookies are never evicted to make room, and the \
            file is locked while it is updated, so concurrent runs lose nothing.
            """
    )

    @Argument(help: "The jar file (a new one: .json lossless json, any other name Netscape cookies.txt), or '-'.")
    var file: String

    @Option(name: .long, help: "The URL the Set-Cookie headers were received from.")
    var url: String

    @OptionGroup var clock: ClockOptions

    @Flag(name: .long, help: "Say on stderr what happened to each cookie (names and reasons, never values).")
    var verbose = false

    @Argument(help: "Set-Cookie header values (a leading 'Set-Cookie:' is dropped); none: read standard input.")
    var setCookies: [String] = []

    func run() throws {
        try reportingFailuresOnThisThread {
            try JarOptions.requireUTF8Arguments()
            let now = try clock.currentDate()
            let requestURL = try JarOptions.parseURL(url)
            // The jar is checked before standard input is read, so a wrong path fails at once.
            try JarFiles.checkWritable(file, now: now)
            let values: [JarStoreInput.Value]
            if setCookies.isEmpty {
                if isatty(STDIN_FILENO) == 1 {
                    Console.err("reading Set-Cookie values from standard input, one a line; end with Ctrl-D")
                }
                let bytes = try JarFiles.readBytes("-") ?? []
                let input = JarStoreInput.values(fromInput: bytes)
                values = input.values
                if verbose && input.ignored > 0 { Console.err("ignored \(input.ignored) other header line(s) of the header dump") }
            } else {
                values = setCookies.map { .success(JarStoreInput.value(fromArgument: $0)) }
            }
            var report = StoreReport()
            let written = try JarFiles.update(file, now: now, standardOutput: Console.outRaw) { existing in
                let storage = CookieStorage(acceptPolicy: .always, limits: CookieLimits(), clock: { now })
                storage.restore(existing)
                let recorded = storage.recordingChanges { () -> [CookieDecision] in
                    let texts = values.compactMap { try? $0.get() }
                    var decided = storage.setCookies(fromHeaders: texts, for: requestURL, mainDocumentURL: nil)[...]
                    // Lines that could not be a header at all keep their place among the decisions.
                    let decisions = values.map { value -> CookieDecision in
                        switch value {
                        case .success: decided.removeFirst()
                        case .failure(let failure): .rejected(name: nil, reason: CookieRejection.parse(failure).description)
                        }
                    }
                    storage.removeExpired()
                    return decisions
                }
                report = StoreReport(decisions: recorded.result, changes: recorded.changes)
                return storage.allCookies
            }
            if verbose {
                for line in report.lines { Console.err(line) }
            } else if let summary = report.summary(file: file == "-" ? "standard output" : file, written: written.count) {
                Console.err("sessionkeeper: \(summary)")
            }
        }
    }
}

/// What one `jar store` did, for `--verbose` (a line per cookie, names and reasons, never values) and the
/// one-line note without it when cookies were refused or evicted (never dropped in silence).
struct StoreReport {
    var decisions: [CookieDecision] = []
    var changes: [CookieChange] = []

    private static func place(_ cookie: Cookie) -> String {
        "\(cookie.hostOnly ? "" : ".")\(cookie.domain)\(cookie.path)"
    }

    var lines: [String] {
        var lines: [String] = []
        for (index, decision) in decisions.enumerated() {
            switch decision {
            case .stored(let cookie):
                lines.append("stored \(cookie.name) for \(Self.place(cookie))"
                    + (cookie.expires.map { " until \(CookieTime.rfc3339($0))" } ?? " (session)"))
            case .rejected(let name, let reason):
                lines.append("rejected \(name.map { "cookie \($0)" } ?? "Set-Cookie value \(index + 1)"): \(reason)")
            }
        }
        for change in changes {
            switch change {
            case .evicted(let cookie, let reason):
                lines.append("evicted \(cookie.name) for \(Self.place(cookie)): \(reason)")
            case .expired(let cookie):
                lines.append("dropped \(cookie.name) for \(Self.place(cookie)): expired"
                    + (cookie.expires.map { " at \(CookieTime.rfc3339($0))" } ?? ""))
            case .removed(let cookie):
                lines.append("deleted \(cookie.name) for \(Self.place(cookie)): the server expired it")
            case .added, .updated:
                break
            }
        }
        return lines
    }

    /// Nil when every value was stored and nothing evicted.
    func summary(file: String, written: Int) -> String? {
        let refused = decisions.filter { if case .rejected = $0 { true } else { false } }.count
        let evicted = changes.filter { if case .evicted = $0 { true } else { false } }.count
        guard refused + evicted > 0 else { return nil }
        var parts: [String] = []
        if refused > 0 { parts.append("\(refused) of \(decisions.count) Set-Cookie value(s) refused") }
        if evicted > 0 { parts.append("\(evicted) cookie(s) evicted over a limit") }
        return "\(file): \(parts.joined(separator: ", ")); \(written) cookie(s) written (--verbose says why)"
    }
}
