// Fuzz target `site-config`: the YAML loader and site validation (libyaml, then the node tree, then the site).
//
// Input: the text of a file, loaded both as config.yaml and as a site file, as `sessionkeeper check` and the
// daemon load them (text that is not UTF-8 is refused before the loader, as `ConfigurationLoader.read` does).
// Nothing may crash; a rejected file throws `ConfigError` (typed), and each of its diagnostics must carry a
// position inside the text and a message. The diagnostics are also rendered as `check` prints them.
import FuzzDriver
import Foundation
import SiteConfig

private let file = "/fuzz/sites/fuzz.yaml"
private let configFile = "/fuzz/config.yaml"
// Names that `env:` sources and `${env.NAME}` may find; nothing of the fuzzing process's own environment.
private let loader = ConfigurationLoader(environment: ["HOME": "/fuzz/home", "FUZZ_USER": "user", "FUZZ_TOKEN": "token"])
private let defaultConfig = loader.defaultConfig(directory: "/fuzz")
private let renderer = DiagnosticRenderer(showSource: true)

@main
enum Main {
    static func main() { runFuzzer(fuzzSiteConfig) }
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput).
func fuzzSiteConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    // The lines a position may name, counted as libyaml (YAML 1.1) counts them: LF, CR, CRLF, NEL, LS and PS
    // each end a line; one past the last line is where libyaml reports the end of the text.
    let lineCount = text.unicodeScalars.reduce(1) { count, scalar in
        ["\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"].contains(scalar) ? count + 1 : count
    } + 1

    do {
        _ = try loader.loadConfig(text: text, file: configFile)
    } catch {
        checkPositions(error, file: configFile, lineCount: lineCount, text: text)
    }
    do {
        let site = try loader.loadSite(text: text, file: file, config: defaultConfig)
        check(!site.name.isEmpty, "a site without a name")
    } catch {
        checkPositions(error, file: file, lineCount: lineCount, text: text)
    }
    return 0
}

private func checkPositions(_ error: ConfigError, file: String, lineCount: Int, text: String) {
    check(!error.diagnostics.isEmpty, "a ConfigError without a diagnostic")
    for diagnostic in error.diagnostics {
        check(diagnostic.mark.file == file, "a diagnostic naming another file")
        check(diagnostic.mark.line >= 1 && diagnostic.mark.line <= lineCount, "a diagnostic line outside the text")
        check(diagnostic.mark.column >= 1, "a diagnostic column below 1")
        check(!diagnostic.message.isEmpty, "a diagnostic without a message")
    }
    check(!renderer.render(error, source: text).isEmpty, "a ConfigError rendered as nothing")
}

/// A broken invariant: a crash libFuzzer records with its input.
private func check(_ condition: Bool, _ invariant: StaticString) {
    if !condition { fatalError("invariant broken: \(invariant)") }
}
