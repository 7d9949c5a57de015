import HTTPTransport

/// A site's `resolve` entries (curl `--resolve` syntax) as settings of the site's own easy handles.
///
/// `CURLOPT_RESOLVE` would put them into the multi handle's DNS cache, shared by every request of the client,
/// so one site's pin would redirect another site's requests to the same name. `CURLOPT_CONNECT_TO` instead
/// belongs to the easy handle: the URL, `Host`, SNI and certificate check keep the name, only the TCP
/// connection goes to the pinned address, and libcurl never reuses a connection made for another connect-to
/// target (or for none) when it matches a request to an idle connection.
///
/// A pin with several addresses (curl tries them in turn) connects to an alias standing for exactly that list,
/// the addresses joined with `_` (`127.0.0.3_127.0.0.1`), which is pinned in the shared DNS cache with
/// `CURLOPT_RESOLVE`. The alias is made of the addresses themselves, so every site that uses it means the same
/// addresses, and `_` never occurs in a host name a URL resolves through DNS.
struct ConnectPins {
    /// `CURLOPT_CONNECT_TO` lines, `HOST:PORT:ADDRESS:PORT` (or the alias in place of the address).
    private(set) var connectTo: [String] = []
    /// `CURLOPT_RESOLVE` lines for the aliases, `ALIAS:PORT:ADDRESS,ADDRESS...`.
    private(set) var aliases: [String] = []

    /// The longest alias: libcurl's DNS cache keys hold host names of up to 255 bytes and cut longer ones.
    static let maxAliasLength = 250

    /// Translates entries already checked by ``RequestValidation``. As with `curl --resolve`, a later entry
    /// for the same `HOST:PORT` replaces an earlier one and `-HOST:PORT` drops it; the `+` prefix (an entry
    /// that may time out of the DNS cache) means nothing here, since a pin lives as long as the options.
    init(_ entries: [String]) {
        var pins: [(key: String, host: Substring, port: Substring, addresses: [Substring])] = []
        for entry in entries {
            guard let parsed = Self.parse(entry) else { continue }
            let key = parsed.host.lowercased() + ":" + parsed.port
            pins.removeAll { $0.key == key }
            if let addresses = parsed.addresses {
                pins.append((key, parsed.host, parsed.port, addresses))
            }
        }
        for pin in pins {
            if pin.addresses.count == 1 {
                connectTo.append("\(pin.host):\(pin.port):\(pin.addresses[0]):\(pin.port)")
            } else {
                let alias = Self.alias(for: pin.addresses)
                connectTo.append("\(pin.host):\(pin.port):\(alias):\(pin.port)")
                aliases.append("\(alias):\(pin.port):\(pin.addresses.joined(separator: ","))")
            }
        }
    }

    /// The host name standing for several addresses: IPv4 as written, IPv6 without brackets and with `-` for
    /// `:` (neither occurs in the other form), joined with `_`.
    static func alias(for addresses: [Substring]) -> String {
        addresses.map { address in
            address.hasPrefix("[")
                ? String(address.dropFirst().dropLast().map { $0 == ":" ? "-" : $0 })
                : String(address)
        }.joined(separator: "_")
    }

    /// `[+]HOST:PORT:ADDRESS[,ADDRESS...]` → its parts; `-HOST:PORT` → addresses nil (a removal).
    static func parse(_ entry: String) -> (host: Substring, port: Substring, addresses: [Substring]?)? {
        var rest = Substring(entry)
        let removal = rest.hasPrefix("-")
        if removal || rest.hasPrefix("+") { rest = rest.dropFirst() }
        let parts = rest.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        if removal {
            return parts.count == 2 ? (parts[0], parts[1], nil) : nil
        }
        guard parts.count == 3 else { return nil }
        return (parts[0], parts[1], parts[2].split(separator: ",", omittingEmptySubsequences: false))
    }
}
