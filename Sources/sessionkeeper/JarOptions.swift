import CookieJar
import Foundation

/// The options of the commands that read and write cookies: a format, a URL, and arguments that must stay
/// UTF-8; each refused with a usage error that says which option and what is expected.
enum JarOptions {
    /// A `--format`/`--from` value, or a usage error listing the valid ones.
    static func parseFormat(_ text: String, option: String) throws -> CookieFormat {
        guard let format = CookieFormat(rawValue: text.lowercased()) else {
            let names = CookieFormat.allCases.map(\.rawValue).joined(separator: ", ")
            throw CLIFailure.usage("\(option): unknown format '\(text)' (expected one of \(names))")
        }
        return format
    }

    /// A `--url` value: an absolute http(s) URL with a host.
    static func parseURL(_ text: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              CookieRules.canonicalHost(of: url) != nil
        else {
            throw CLIFailure.usage("--url: '\(text)' is not an absolute http or https URL with a host")
        }
        return url
    }

    /// Refuses command-line arguments that are not UTF-8: Swift would hand them over with their bytes
    /// replaced, and a cookie's bytes are never rewritten (SPEC section 4).
    static func requireUTF8Arguments() throws {
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index], String(validatingCString: raw) == nil else { continue }
            throw CLIFailure.usage(
                "argument \(index) holds bytes that are not UTF-8; cookie names and values are kept as UTF-8 text "
                    + "and never rewritten, so it is refused")
        }
    }
}
