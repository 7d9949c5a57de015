import ArgumentParser
import CookieJar
import Foundation
import Sessions

/// `jar convert IN OUT [--from F] [--format F] [--url U] [--now T]`
struct JarConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert a cookie file between formats (input guessed from the content; IN '-' is stdin, OUT '-' is stdout).",
        discussion: """
            An existing OUT is replaced only when it is empty or a cookie file; a symbolic link is followed, \
            anything but a regular file is refused, and the file is locked while it is written.
            """
    )

    @Argument(help: "The input file, or '-' for standard input.")
    var input: String

    @Argument(help: "The output file, written with mode 0600, or '-' for standard output.")
    var output: String

    @Option(name: .long, help: "The output format (default: json for .json names, else netscape).")
    var format: String?

    @Option(name: .long, help: "The input format (default: guessed from the content).")
    var from: String?

    @Option(name: .long, help: "The URL the cookies belong to (needed to read the header format).")
    var url: String?

    @OptionGroup var clock: ClockOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let now = try clock.currentDate()
            let outputFormat = try format.map { try JarOptions.parseFormat($0, option: "--format") }
                ?? JarFiles.format(forPath: output)
            let sourceURL = try url.map(JarOptions.parseURL)
            guard let text = try JarFiles.readText(input, missingIsEmpty: false) else { return }
            let inputFormat: CookieFormat
            if let from {
                inputFormat = try JarOptions.parseFormat(from, option: "--from")
            } else if let guessed = CookieFormat.guess(from: text) {
                inputFormat = guessed
            } else if text.allSatisfy(\.isWhitespace) {
                inputFormat = .netscape
            } else {
                throw CLIFailure.usage("\(input): cannot tell the cookie format; give --from")
            }
            let cookies = try JarFiles.decode(text, as: inputFormat, path: input, url: sourceURL, now: now)
            if output == "-" {
                let encoded = CookieCodec.encode(cookies, as: outputFormat)
                Console.outRaw(outputFormat == .header ? (encoded.isEmpty ? "" : encoded + "\n") : encoded)
            } else {
                try JarFiles.replace(output, with: cookies, format: outputFormat, now: now)
            }
        }
    }
}
