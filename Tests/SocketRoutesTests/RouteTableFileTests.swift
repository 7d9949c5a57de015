import Foundation
import JSON
import SocketRoutes
import Testing

/// `docs/socket-routes.json` is the route table as the Python client's tests read it: it must say what
/// ``SocketRoute`` says. With SESSIONKEEPER_WRITE_ROUTES=1 the test writes the file from the table instead.
struct RouteTableFileTests {
    /// The repository's `docs/socket-routes.json`, found from this file's place in `Tests/SocketRoutesTests`.
    static let file = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/socket-routes.json")

    /// The table as JSON: one route a line, so that a change reads as a one-line diff.
    static func describedTable() -> String {
        let routes = SocketRoute.allCases.map { route -> String in
            JSONWriter.write(.object([
                ("name", .string(route.rawValue)),
                ("methods", .array(route.methods.map(JSONValue.string))),
                ("pattern", .string(route.pattern)),
                ("parameters", .array(route.parameters.map { .string($0.rawValue) })),
                ("streams_request_body", .bool(route.streamsRequestBody)),
            ]), layout: .spaced)
        }
        return """
            {"about": "The socket API's routes (docs/API.md), written from Sources/SocketRoutes by SocketRoutesTests \
            (SESSIONKEEPER_WRITE_ROUTES=1); do not edit by hand.",
             "routes": [
              \(routes.joined(separator: ",\n  "))
            ]}

            """
    }

    @Test func theFileDescribesTheTable() throws {
        let expected = Self.describedTable()
        if ProcessInfo.processInfo.environment["SESSIONKEEPER_WRITE_ROUTES"] == "1" {
            try expected.write(to: Self.file, atomically: true, encoding: .utf8)
        }
        let written = try String(contentsOf: Self.file, encoding: .utf8)
        #expect(
            written == expected,
            """
            \(Self.file.path) does not describe Sources/SocketRoutes: write it again with
            SESSIONKEEPER_WRITE_ROUTES=1 swift test --filter RouteTableFileTests
            """)
        // The file is JSON a client can read, with every route.
        let parsed = try JSONValue.parse(written)
        guard case .array(let routes)? = parsed["routes"] else {
            Issue.record("\(Self.file.path): no 'routes' list")
            return
        }
        #expect(routes.count == SocketRoute.allCases.count)
    }
}

/// The targets clients send: the pattern filled in, the site's name and the values percent-encoded.
struct RouteTargetTests {
    @Test func aSiteRouteTakesTheNameAndTheSetParametersInOrder() {
        #expect(SocketRoute.site.target(site: "demo") == "/v1/sites/demo")
        #expect(SocketRoute.cookies.target(site: "demo", query: [(.format, "json"), (.url, nil), (.wait, "30s")])
            == "/v1/sites/demo/cookies?format=json&wait=30s")
        #expect(SocketRoute.cookies.target(site: "demo", query: [(.url, "https://a.example/p?q=1 2")])
            == "/v1/sites/demo/cookies?url=https%3A%2F%2Fa.example%2Fp%3Fq%3D1%202")
        #expect(SocketRoute.refresh.target(site: "demo", query: [(.wait, nil)]) == "/v1/sites/demo/refresh")
        #expect(SocketRoute.sites.target() == "/v1/sites")
        #expect(SocketRoute.metrics.target() == "/metrics")
    }

    /// The name is one segment whatever it holds: a `/`, a `?` or a space cannot change the route.
    @Test func theSiteNameIsPercentEncoded() {
        #expect(SocketRoute.cookies.target(site: "a/b?c d") == "/v1/sites/a%2Fb%3Fc%20d/cookies")
        #expect(SocketRoute.site.target(site: "wiki.example_1-x~") == "/v1/sites/wiki.example_1-x~")
        #expect(SocketRoute.site.target(site: "é") == "/v1/sites/%C3%A9")
        #expect(SocketRoute.matching(SocketRoute.cookies.target(site: "a/b")) == [.cookies])
    }

    @Test func theEgressRouteTakesTheSitesPathAsWritten() {
        #expect(SocketRoute.proxy.target(site: "demo") == "/v1/sites/demo/proxy")
        #expect(SocketRoute.proxy.target(site: "demo", rest: "/api/me?x=%20") == "/v1/sites/demo/proxy/api/me?x=%20")
    }

    /// Every route's target for a site matches that route, and its pattern, once filled, no other.
    @Test func everyTargetMatchesItsOwnRoute() {
        for route in SocketRoute.allCases {
            let target = route.target(site: route.namesSite ? "demo" : nil)
            #expect(SocketRoute.matching(target) == [route], "\(route)")
            #expect(route.methods.first == route.method)
        }
    }
}
