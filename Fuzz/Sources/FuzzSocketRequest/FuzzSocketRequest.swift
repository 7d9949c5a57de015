// Fuzz target `socket-request`: the socket's request handling that does not need a running daemon.
//
// Input: line 1 the method, line 2 the request target (path and query string), then header lines up to an
// empty line, then the body. The request is built as Hummingbird hands it to the routes; then the route table
// matches its path (405 and the metrics' route label), every route's query check runs (unknown and repeated
// parameters, `format=`, `url=`, `min_valid=`, `wait=`, `status=`), the `set-cookie` route's body is split
// into values and stored in a jar for the `url=` (or a default) URL, and each refusal is rendered as the JSON
// error the socket answers. Header limits are Hummingbird's own decoder settings (SocketServer.Limits), not
// code of this project, so they are not fuzzed here. Nothing may crash; a refusal is a 400 `bad_request`
// naming the parameter. The same bytes, read as a connection's, check how the socket finds where a request head
// ends (HeadScanner).
import FuzzDriver
import CookieJar
import Foundation
import HTTPTypes
import Hummingbird
@testable import SocketAPI
import SiteConfig

private let now = Date(timeIntervalSince1970: 1_700_000_000)
private let defaultURL = URL(string: "https://app.example.com/")!

/// The parameter sets of the routes (SPEC section 8): none, cookies, refresh, report, set-cookie.
private let routeParameters: [Set<String>] = [[], ["format", "url", "min_valid", "wait"], ["wait"], ["status"], ["url"]]

@main
enum Main {
    static func main() { runFuzzer(fuzzSocketRequest) }
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput).
func fuzzSocketRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkHeadScanner(bytes)
    var lines = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard lines.count >= 2 else { return 0 }
    let rest = lines.count > 2 ? lines.removeLast() : ""
    let method = HTTPRequest.Method(lines[0]) ?? .get
    let target = lines[1]
    let (fields, body) = headersAndBody(rest)

    let request = Request(
        head: HTTPRequest(method: method, scheme: nil, authority: nil, path: target, headerFields: fields),
        body: RequestBody(buffer: ByteBuffer(string: body)))

    if let route = RouteTable.match(request.uri.path) {
        check(RouteTable.routes.contains { $0.pattern == route.pattern } && !route.methods.isEmpty, "a route outside the table")
    }
    var url = defaultURL
    for allowed in routeParameters {
        do {
            let query = try Query(request, allowed: allowed)
            if allowed.contains("format") { _ = try query.format("format") }
            if allowed.contains("url"), let given = try query.url("url") {
                check(CookieRules.canonicalHost(of: given) != nil, "url= accepted without a host")
                url = given
            }
            for name in ["min_valid", "wait"] where allowed.contains(name) {
                if let duration = try query.duration(name) { check(duration >= .zero, "a negative duration accepted") }
            }
            if allowed.contains("status"), let status = try query.integer("status", in: 100...599) {
                check((100...599).contains(status), "a status outside 100...599 accepted")
            }
        } catch {
            // By bytes: a parameter name that starts with a combining mark joins the quote into one Character.
            check(error.status == .badRequest && error.code == .badRequest && error.message.utf8.starts(with: "query parameter '".utf8),
                  "a query refusal that is not a 400 naming the parameter")
            _ = error.response()
        }
    }

    let values = APIRoutes.setCookieValues(body)
    for value in values {
        check(!value.isEmpty && !value.contains(where: \.isNewline), "a set-cookie value empty or holding a line break")
    }
    let jar = CookieStorage(clock: { now })
    let decisions = jar.setCookies(fromHeaders: values, for: url, mainDocumentURL: url)
    check(decisions.count == values.count, "one decision per set-cookie value")
    return 0
}

/// Header lines up to the first empty one (fields whose name or value HTTP forbids are left out, as the
/// server's decoder would refuse them), then the body.
private func headersAndBody(_ text: String) -> (HTTPFields, String) {
    var fields = HTTPFields()
    var remaining = Substring(text)
    while let end = remaining.firstIndex(of: "\n") {
        let line = remaining[..<end]
        remaining = remaining[remaining.index(after: end)...]
        if line.isEmpty { return (fields, String(remaining)) }
        guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard HTTPField.isValidValue(value) else { continue }
        fields.append(HTTPField(name: name, value: value))
    }
    return (fields, String(remaining))
}

/// The input as the bytes of a connection: ``HeadScanner`` (how ``WireReplay`` finds request heads) gives the
/// same result whether the bytes come at once, in pieces or a byte at a time, and the result is the one a plain
/// reading of RFC 9112's CRLF-ended lines gives: the end of the first empty line, or the first CR without LF,
/// LF without CR or empty first line.
private func checkHeadScanner(_ bytes: [UInt8]) {
    let expected = plainHeadScan(bytes)
    for piece in [bytes.count, 7, 1] where piece > 0 {
        var scanner = HeadScanner()
        var result = HeadScanner.Result.incomplete
        var end = 0
        while result == .incomplete, end < bytes.count {
            end = min(bytes.count, end + piece)
            result = bytes[..<end].withUnsafeBytes { scanner.scan($0) }
        }
        check(result == expected, "the head scanner disagrees with a plain reading of the lines")
    }
}

private func plainHeadScan(_ bytes: [UInt8]) -> HeadScanner.Result {
    let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
    var lineStart = 0
    for (index, byte) in bytes.enumerated() {
        if byte == cr, index + 1 < bytes.count, bytes[index + 1] != lf { return .malformed }
        guard byte == lf else { continue }
        guard index > 0, bytes[index - 1] == cr else { return .malformed }
        if index - 1 == lineStart { return lineStart == 0 ? .malformed : .end(index + 1) }
        lineStart = index + 1
    }
    return .incomplete
}

/// A broken invariant: a crash libFuzzer records with its input.
private func check(_ condition: Bool, _ invariant: StaticString) {
    if !condition { fatalError("invariant broken: \(invariant)") }
}
