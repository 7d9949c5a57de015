// Fuzz target `cookie-import`: every cookie import format (Netscape cookies.txt, json, Playwright's
// storageState, Set-Cookie lines and response header dumps on standard input, a Cookie header) and the guess
// of the format from the content.
//
// Input: a file's bytes. They go the way `sessionkeeper import SITE FILE` takes them (UTF-8 checked, the
// format guessed, a header dump read as Set-Cookie lines, the cookies admitted to a jar for the site's
// base_url under main-document-domain), and then through each format's reader named explicitly, as
// `--format` and `jar convert` do. Besides crashes, a broken invariant traps:
// - a format error names a line inside the text;
// - a cookie admitted to the jar is within the base URL's registrable domain;
// - the lossless `json` format reads back what it wrote (to the microsecond), for whatever any reader produced.
import FuzzDriver
@testable import CookieJar
import Foundation

private let now = Date(timeIntervalSince1970: 1_700_000_000)
private let base = URL(string: "https://app.example.com/login")!

@main
enum Main {
    static func main() { runFuzzer(fuzzCookieImport) }
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput).
func fuzzCookieImport(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Standard input's Set-Cookie lines are split before any UTF-8 check: each line is refused alone.
    for case .success(let value) in JarStoreInput.values(fromInput: bytes).values {
        check(!value.contains("\n"), "a Set-Cookie value from standard input holding a line break")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    let lineCount = bytes.reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }

    let isHeaderDump = text.drop { $0.isWhitespace }.hasPrefix("HTTP/")
    if let guessed = isHeaderDump ? .setCookie : CookieFormat.guess(from: text) {
        importAsCLI(text, bytes: bytes, format: guessed, lineCount: lineCount)
    }
    for format in CookieFormat.allCases {
        importAsCLI(text, bytes: bytes, format: format, lineCount: lineCount)
    }
    return 0
}

/// `CookieImport.admit` of the CLI, with the site's base URL fixed.
private func importAsCLI(_ text: String, bytes: [UInt8], format: CookieFormat, lineCount: Int) {
    let jar = CookieStorage(acceptPolicy: .mainDocumentDomain, clock: { now })
    if format == .setCookie {
        let values = JarStoreInput.values(fromInput: bytes).values.compactMap { try? $0.get() }
        _ = jar.setCookies(fromHeaders: values, for: base, mainDocumentURL: base)
    }
    var input = Substring(text)
    if format == .header {
        input = Substring(text.trimmingCharacters(in: .whitespacesAndNewlines))
        if input.lowercased().hasPrefix("cookie:") { input = input.dropFirst("cookie:".count) }
    }
    do {
        let cookies = try CookieCodec.decode(String(input), as: format, url: base, now: now)
        // A cookie no Set-Cookie header could have made (a control character in its path, say) is refused by
        // every reader of the product (`JarFiles.decode`, `import`), so only the others must survive a rewrite.
        if cookies.allSatisfy({ $0.fileProblem == nil }) {
            checkJSONRoundTrip(cookies)
            _ = jar.setCookies(cookies, mainDocumentURL: base)
        }
    } catch {
        if let line = error.line { check(line >= 1 && line <= lineCount, "a format error naming a line outside the text") }
        check(!error.message.isEmpty, "a format error without a message")
    }
    let site = PublicSuffixList.shared.registrableDomain(of: "app.example.com")
    for cookie in jar.allCookies {
        check(CookieRules.domainMatches(host: cookie.domain, domain: site), "an imported cookie outside the site's registrable domain")
    }
    checkJSONRoundTrip(jar.allCookies)
    for format in CookieFormat.allCases { _ = CookieCodec.encode(jar.allCookies, as: format) }
}

/// Times are written to the microsecond (a Playwright `expires` may hold more digits), so the check is that
/// the written text is a fixed point: reading it and writing again gives the same text.
private func checkJSONRoundTrip(_ cookies: [Cookie]) {
    let written = CookieCodec.encode(cookies, as: .json)
    do {
        let readBack = try CookieCodec.decode(written, as: .json, url: nil, now: now)
        check(readBack.count == cookies.count && CookieCodec.encode(readBack, as: .json) == written,
              "the json format did not read back what it wrote")
    } catch {
        check(false, "the json format could not read what it wrote")
    }
}

/// A broken invariant: a crash libFuzzer records with its input.
private func check(_ condition: Bool, _ invariant: StaticString) {
    if !condition { fatalError("invariant broken: \(invariant)") }
}
