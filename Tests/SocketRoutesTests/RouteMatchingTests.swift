import SocketRoutes
import Testing

/// The rules read from every request's head before it reaches the router: which route a path names, whether its
/// body streams on (the request deadline then holds only the head).
struct RouteMatchingTests {
    @Test(arguments: [
        ("/v1/health", [SocketRoute.health]),
        ("/v1/sites", [.sites]),
        ("/v1/sites/demo", [.site]),
        ("/v1/sites/demo/cookies", [.cookies]),
        ("/v1/sites/demo/proxy", [.proxy]),
        ("/v1/sites/demo/proxy/", [.proxy]),
        ("/v1/sites/demo/proxy/api/me", [.proxy]),
        ("/v1/sites//cookies", []),
        ("/v1/sites/demo/cookies/more", []),
        ("/v1/site", []),
        ("", []),
        ("/", []),
    ])
    func pathsNameTheirRoutes(path: String, routes: [SocketRoute]) {
        #expect(SocketRoute.matching(path) == routes)
    }

    @Test func onlyTheProxyRoutesBodyStreams() {
        #expect(SocketRoute.streamsRequestBody(path: "/v1/sites/demo/proxy/upload"))
        #expect(SocketRoute.streamsRequestBody(path: "/v1/sites/demo/proxy"))
        #expect(!SocketRoute.streamsRequestBody(path: "/v1/sites/demo/cookies"))
        #expect(!SocketRoute.streamsRequestBody(path: "/v1/sites//proxy/x"))
        #expect(!SocketRoute.streamsRequestBody(path: "/v2/sites/demo/proxy/x"))
    }
}

extension RouteMatchingTests {
    @Test func theSiteSegmentIsTheThirdAsWritten() {
        #expect(SocketRoute.siteSegment(in: "/v1/sites/my%2Esite/cookies") == "my%2Esite")
        #expect(SocketRoute.siteSegment(in: "/v1/sites/demo") == "demo")
        #expect(SocketRoute.siteSegment(in: "/v1/health") == nil)
    }
}
