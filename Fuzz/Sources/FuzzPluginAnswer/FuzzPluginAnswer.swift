// Fuzz target `plugin-answer`: the decoder of a login plugin's answer (SPEC section 5).
//
// Input: the first byte picks how the plugin ended (mostly exit status 0; also a failed exit, a signal, the
// timeout, output cut at the cap), the rest is its standard output. `FlowEngine.parseAnswer` decodes it, and
// the answer is applied as the engine applies it: variables and headers as plain text, the secrets masked,
// `cookies` and `set_cookie` stored in the site's jar. Nothing may crash; a refused answer is a `FlowError`
// of kind `.plugin` whose detail names the plugin.
import FuzzDriver
import CookieJar
import Foundation
import HTTPTransport
@testable import LoginFlow

private let now = Date(timeIntervalSince1970: 1_700_000_000)
private let base = URL(string: "https://app.example.com/")!

@main
enum Main {
    static func main() { runFuzzer(fuzzPluginAnswer) }
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput).
func fuzzPluginAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size >= 1 else { return 0 }
    let selector = data[0]
    let standardOutput = Data(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let termination: PluginOutput.Termination = switch selector & 0x07 {
    case 5: .exited(Int32(selector >> 3) + 1)
    case 6: .signaled(Int32(selector >> 3) + 1)
    case 7: .timedOut
    default: .exited(0)
    }
    let output = PluginOutput(termination: termination, standardOutput: standardOutput, outputTruncated: selector == 0xFF)
    let failure = { (detail: String) in FlowError(kind: .plugin, site: "fuzz", step: "plugin", mark: nil, detail: "fuzz-plugin: \(detail)") }

    let reply: FlowEngine.PluginReply
    do {
        reply = try FlowEngine.parseAnswer(output, timeout: .seconds(30), now: now, failure: failure)
    } catch {
        check(error.kind == .plugin && error.detail?.hasPrefix("fuzz-plugin: ") == true, "a refused answer that is not the plugin's FlowError")
        return 0
    }
    check(termination == .exited(0) && !output.outputTruncated, "an answer accepted from a plugin that failed")

    var variables: [String: String] = [:]
    var headers = HTTPHeaders()
    var masker = SecretMasker()
    for (name, value) in (reply.vars ?? [:]).sorted(by: { $0.key < $1.key }) {
        variables[name] = value.plainText
        masker.addValue(value.plainText)
    }
    for (name, value) in (reply.headers ?? [:]).sorted(by: { $0.key < $1.key }) {
        headers.replaceOrAdd(name: name, value: value.plainText)
        masker.addSecret(value.plainText)
    }
    let jar = CookieStorage(acceptPolicy: .mainDocumentDomain, clock: { now })
    if let cookies = reply.cookies {
        for cookie in cookies { masker.addValue(cookie.value) }
        jar.setCookies(cookies, mainDocumentURL: base)
    }
    if let lines = reply.setCookie {
        for case .stored(let cookie) in jar.setCookies(fromHeaders: lines, for: base, mainDocumentURL: base) { masker.addValue(cookie.value) }
    }
    // Error details and plugin stderr lines are redacted with what the answer added.
    _ = masker.redact(variables.values.joined(separator: " "))
    _ = jar.cookieHeader(for: base)
    return 0
}

/// A broken invariant: a crash libFuzzer records with its input.
private func check(_ condition: Bool, _ invariant: StaticString) {
    if !condition { fatalError("invariant broken: \(invariant)") }
}
