// Fuzz target `socket-request`: the socket's request handling that does not need a running daemon.
//
// Input: line 1 the method, line 2 the request target (path and query string), then header lines up to an
// empty line, then the body. The target is split into path and query as the server core hands them to the
// routes; then the socket's route table (SocketRoute) matches its path (405 and the metrics' route label), every route of the table reads
// its query parameters as the route does (RouteQuery: unknown and repeated parameters, `format=`, `url=`,
// `min_valid=`, `wait=`, `status=`), the `set-cookie` route's body is split into values and stored in a jar for
// the `url=` (or a default) URL, and each refusal is rendered as the JSON error the socket answers. Header limits
// and the `close` option are NIO's decoder's (SocketServer.Limits sets the limits), not code of this project, so
// they are not fuzzed here. Nothing may crash; a refusal is
// a 400 `bad_request` naming the parameter.
import FuzzDriver
import CookieJar
import Foundation
import HTTPTypes
@testable import SocketAPI
import SiteConfig
import SocketRoutes

private let now = Date(timeIntervalSince1970: 1_700_000_000)
private let defaultURL = URL(string: "https://app.example.com/")!

@main
enum Main {
    static func main() { runFuzzer(fuzzSocketRequest) }
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput).
func fuzzSocketRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var lines = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard lines.count >= 2 else { return 0 }
    let rest = lines.count > 2 ? lines.removeLast() : ""
    let target = lines[1]
    let (_, body) = headersAndBody(rest)

    let mark = target.firstIndex(of: "?")
    let path = target[..<(mark ?? target.endIndex)]
    let queryText = mark.map { target[target.index(after: $0)...] }

    let matched = SocketRoute.matching(path)
    check(Set(matched.map(\.pattern)).count <= 1, "a path matched by routes of different patterns")
    var url = defaultURL
    for route in SocketRoute.allCases {
        do {
            let query = try RouteQuery(query: queryText, for: route)
            if let given = query.url {
                check(route.parameters.contains(.url), "url= read for a route that takes none")
                check(CookieRules.canonicalHost(of: given) != nil, "url= accepted without a host")
                url = given
            }
            for duration in [query.minValid, query.wait].compactMap(\.self) {
                check(duration >= .zero, "a negative duration accepted")
            }
            if let status = query.status { check((100...599).contains(status), "a status outside 100...599 accepted") }
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

/// A broken invariant: a crash libFuzzer records with its input.
private func check(_ condition: Bool, _ invariant: StaticString) {
    if !condition { fatalError("invariant broken: \(invariant)") }
}
