import HTTPTransport
import Testing

/// `Connection`'s list (RFC 9110 sections 5.6.1, 5.6.3, 7.6.1): the socket and the egress proxy read it the same way.
struct ConnectionOptionsTests {
    @Test(arguments: [
        ("close", ["close"]),
        ("keep-alive, X-Private", ["keep-alive", "X-Private"]),
        ("Upgrade,\tClose", ["Upgrade", "Close"]),
        (" a ,\t b\t, c", ["a", "b", "c"]),
        (",,close,", ["close"]),
        (", ,\t,", []),
        ("", []),
        ("c lose", ["c lose"]),
        // Only SP and HTAB are optional whitespace: a no-break space or a vertical tab is part of the option.
        ("close\u{00A0}", ["close\u{00A0}"]),
        ("\u{0B}x-hop", ["\u{0B}x-hop"]),
        ("é, ü ", ["é", "ü"]),
    ])
    func theOptionsAreTheListsElementsWithoutTheirWhitespace(value: String, options: [String]) {
        #expect(ConnectionOptions(value).map(String.init) == options)
    }

    @Test func anOptionIsASliceOfTheValue() {
        let value = "keep-alive, close"
        let options = Array(ConnectionOptions(value))
        #expect(options.map(String.init) == ["keep-alive", "close"])
        #expect(options.last?.startIndex == value.firstRange(of: "close")?.lowerBound)
    }
}
