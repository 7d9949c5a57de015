import Testing

@testable import SocketAPI

/// The rules read from every request's head before it reaches the router: which route a path names, whether its
/// body streams on (the request deadline then holds only the head).
struct RequestHeadRulesTests {
    @Test(arguments: [
        ("/v1/health", [APIRoute.health]),
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
    func pathsNameTheirRoutes(path: String, routes: [APIRoute]) {
        #expect(APIRoute.matching(path) == routes)
    }

    @Test func onlyTheProxyRoutesBodyStreams() {
        #expect(APIRoute.streamsRequestBody(path: "/v1/sites/demo/proxy/upload"))
        #expect(APIRoute.streamsRequestBody(path: "/v1/sites/demo/proxy"))
        #expect(!APIRoute.streamsRequestBody(path: "/v1/sites/demo/cookies"))
        #expect(!APIRoute.streamsRequestBody(path: "/v1/sites//proxy/x"))
        #expect(!APIRoute.streamsRequestBody(path: "/v2/sites/demo/proxy/x"))
    }
}
