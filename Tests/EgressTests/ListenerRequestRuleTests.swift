import Egress
import SiteConfig
import Testing

/// The loopback listener's refusal of web pages' requests (SPEC section 10), without I/O.
@Suite struct ListenerRequestRuleTests {
    let rule = ListenerRequestRule(listen: LoopbackListenAddress(host: "127.0.0.1", port: 8481))

    func refusal(host: [String], origin: [String] = [], site: [String] = []) -> String? {
        rule.refusal(hostFields: host, originFields: origin, fetchSiteFields: site)
    }

    @Test func aProgramsRequestToTheListenAddressOrLocalhostIsServed() {
        #expect(refusal(host: ["127.0.0.1:8481"]) == nil)
        #expect(refusal(host: ["localhost:8481"]) == nil)
        #expect(refusal(host: ["LocalHost:8481"]) == nil, "a host name's case does not matter")
        #expect(refusal(host: [" 127.0.0.1:8481 "]) == nil)
        // What a browser sends for a page the listener itself served, or a URL typed in.
        #expect(refusal(host: ["127.0.0.1:8481"], origin: ["http://127.0.0.1:8481"], site: ["same-origin"]) == nil)
        #expect(refusal(host: ["localhost:8481"], origin: ["http://localhost:8481"], site: ["none"]) == nil)
    }

    @Test func anotherHostIsRefusedAsARebindingPagesRequest() {
        let reason = refusal(host: ["evil.example"])
        #expect(reason?.contains("Host \"evil.example\" is not this listener's address") == true, "\(reason ?? "-")")
        #expect(reason?.contains("127.0.0.1:8481") == true)
        #expect(refusal(host: ["evil.example:8481"]) != nil)
        #expect(refusal(host: ["127.0.0.1:8482"]) != nil, "another port")
        #expect(refusal(host: ["127.0.0.1"]) != nil, "port 80 is not the listener's")
        #expect(refusal(host: ["127.0.0.2:8481"]) != nil)
        #expect(refusal(host: []) == "the request has no Host field")
        #expect(refusal(host: ["127.0.0.1:8481", "evil.example"]) == "the request has 2 Host fields")
    }

    @Test func aWebPagesOriginOrFetchSiteIsRefused() {
        let origin = refusal(host: ["127.0.0.1:8481"], origin: ["http://evil.example"])
        #expect(origin?.contains("Origin \"http://evil.example\"") == true, "\(origin ?? "-")")
        #expect(origin?.contains("the listener is for programs") == true)
        #expect(refusal(host: ["127.0.0.1:8481"], origin: ["null"]) != nil, "a sandboxed page or a file")
        #expect(refusal(host: ["127.0.0.1:8481"], origin: ["https://127.0.0.1:8481"]) != nil, "not the listener's scheme")
        #expect(refusal(host: ["127.0.0.1:8481"], origin: ["http://localhost:8482"]) != nil)
        for site in ["cross-site", "same-site", "Cross-Site", "bogus"] {
            let reason = refusal(host: ["127.0.0.1:8481"], site: [site])
            #expect(reason?.contains("Sec-Fetch-Site \"\(site.lowercased())\"") == true, "\(site): \(reason ?? "-")")
        }
        #expect(refusal(host: ["127.0.0.1:8481"], site: ["none", "cross-site"]) != nil, "every field counts")
    }

    @Test func theReasonIsOneLineWhateverTheClientSent() {
        let reason = refusal(host: ["evil\r\nX-Injected: 1\"" + String(repeating: "a", count: 300)])
        #expect(reason?.contains("\n") == false && reason?.contains("\r") == false)
        #expect(reason?.contains("...") == true, "a long value is cut short")
        #expect((reason?.count ?? 0) < 300)
    }

    @Test func anIPv6ListenerTakesItsBracketedAddressAndPort80MayGoUnsaid() {
        let six = ListenerRequestRule(listen: LoopbackListenAddress(host: "::1", port: 8481))
        #expect(six.refusal(hostFields: ["[::1]:8481"], originFields: ["http://[::1]:8481"], fetchSiteFields: []) == nil)
        #expect(six.refusal(hostFields: ["::1:8481"], originFields: [], fetchSiteFields: []) != nil)
        let eighty = ListenerRequestRule(listen: LoopbackListenAddress(host: "127.0.0.1", port: 80))
        #expect(eighty.refusal(hostFields: ["127.0.0.1"], originFields: [], fetchSiteFields: []) == nil)
        #expect(eighty.refusal(hostFields: ["localhost"], originFields: [], fetchSiteFields: []) == nil)
        #expect(eighty.refusal(hostFields: ["localhost:80"], originFields: [], fetchSiteFields: []) == nil)
    }
}
