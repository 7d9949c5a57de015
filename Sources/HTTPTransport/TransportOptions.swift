import Foundation

/// Transport settings of one site (SPEC section 3, `http:`). Every field is optional in YAML; the
/// defaults here are the ones the daemon applies when neither the site nor `config.yaml` sets them.
public struct TransportOptions: Sendable, Hashable {
    /// Which protocol version to ask for.
    public enum HTTPVersion: String, Sendable, Hashable, CaseIterable {
        case http1_1 = "1.1"
        case http2 = "2"
        case http3 = "3"
    }

    /// A client certificate and its private key, both PEM files.
    public struct ClientCertificate: Sendable, Hashable {
        public var certificatePath: String
        public var keyPath: String
        public init(certificatePath: String, keyPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    /// The default cap on a response body: 8 MiB.
    public static let defaultMaxBodySize = 8 * 1024 * 1024

    /// The whole transfer, connect included.
    public var timeout: Duration
    public var connectTimeout: Duration
    public var userAgent: String?
    /// `socks5h://...`, `http://...`; nil means no proxy (environment variables are not consulted).
    public var proxy: String?
    /// curl `--resolve` entries, `HOST:PORT:ADDRESS`. URLs, Host, SNI and cookies keep the name.
    public var resolve: [String]
    public var caFile: String?
    public var clientCertificate: ClientCertificate?
    /// Skip TLS peer and host verification.
    public var insecure: Bool
    /// nil leaves the choice to libcurl (HTTP/2 over TLS when the server offers it, else 1.1).
    public var httpVersion: HTTPVersion?
    public var maxBodySize: Int

    public init(
        timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10), userAgent: String? = nil,
        proxy: String? = nil, resolve: [String] = [], caFile: String? = nil,
        clientCertificate: ClientCertificate? = nil, insecure: Bool = false, httpVersion: HTTPVersion? = nil,
        maxBodySize: Int = TransportOptions.defaultMaxBodySize
    ) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.userAgent = userAgent
        self.proxy = proxy
        self.resolve = resolve
        self.caFile = caFile
        self.clientCertificate = clientCertificate
        self.insecure = insecure
        self.httpVersion = httpVersion
        self.maxBodySize = maxBodySize
    }
}
