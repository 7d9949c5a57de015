import ArgumentParser
import CookieJar

/// `jar store FILE --url U [--now T] [--verbose] SETCOOKIE...`
struct JarStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Apply Set-Cookie header values received from a URL to a jar file (created if missing)."
    )

    @Argument(help: "The jar file (.json: lossless json; otherwise Netscape cookies.txt).")
    var file: String

    @Option(name: .long, help: "The URL the Set-Cookie headers were received from.")
    var url: String

    @OptionGroup var clock: ClockOptions

    @Flag(name: .long, help: "Say on stderr what happened to each cookie (names and reasons, never values).")
    var verbose = false

    @Argument(help: "Set-Cookie header values, without the field name.")
    var setCookies: [String] = []

    func run() async throws {
        try await reportingFailures {
            let now = try clock.currentDate()
            let requestURL = try JarFiles.parseURL(url)
            let storage = try JarFiles.storage(loading: file, now: now, missingIsEmpty: true)
            let decisions = storage.setCookies(fromHeaders: setCookies, for: requestURL, mainDocumentURL: nil)
            if verbose {
                for (index, decision) in decisions.enumerated() {
                    switch decision {
                    case .stored(let cookie):
                        Console.err("stored \(cookie.name) for \(cookie.hostOnly ? "" : ".")\(cookie.domain)\(cookie.path)"
                            + (cookie.expires.map { " until \(CookieTime.rfc3339($0))" } ?? " (session)"))
                    case .rejected(let name, let reason):
                        Console.err("rejected \(name.map { "cookie \($0)" } ?? "Set-Cookie value \(index + 1)"): \(reason)")
                    }
                }
            }
            // A rejected Set-Cookie is the jar working as designed, not an error: the file is written either way.
            storage.removeExpired()
            try JarFiles.save(storage.allCookies, to: file, format: JarFiles.format(forPath: file))
        }
    }
}
