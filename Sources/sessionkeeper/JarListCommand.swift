import ArgumentParser
import CookieJar
import Sessions

/// `jar list FILE [--format F] [--now T]`
struct JarListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print a jar's cookies that are not expired at --now (default format: netscape)."
    )

    @Argument(help: "The jar file.")
    var file: String

    @Option(name: .long, help: "header, set-cookie, netscape, json or playwright.")
    var format: String = CookieFormat.netscape.rawValue

    @OptionGroup var clock: ClockOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let outputFormat = try JarOptions.parseFormat(format, option: "--format")
            let now = try clock.currentDate()
            let cookies = try JarFiles.load(file, now: now).filter { !$0.isExpired(at: now) }
            let text = CookieCodec.encode(cookies, as: outputFormat)
            if outputFormat == .header {
                if !text.isEmpty { Console.out(text) }
            } else {
                Console.outRaw(text)
            }
        }
    }
}
