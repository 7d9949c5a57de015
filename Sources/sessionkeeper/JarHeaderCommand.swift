import ArgumentParser
import CookieJar
import Sessions

/// `jar header FILE --url U [--now T]`
struct JarHeaderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "header",
        abstract: "Print the Cookie header value a request to a URL would carry (nothing when no cookie applies)."
    )

    @Argument(help: "The jar file.")
    var file: String

    @Option(name: .long, help: "The request URL.")
    var url: String

    @OptionGroup var clock: ClockOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let now = try clock.currentDate()
            let requestURL = try JarOptions.parseURL(url)
            let storage = try JarFiles.storage(loading: file, now: now)
            if let header = storage.cookieHeader(for: requestURL) { Console.out(header) }
        }
    }
}
