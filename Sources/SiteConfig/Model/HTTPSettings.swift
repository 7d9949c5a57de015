/// A site's transport settings (SPEC section 3, `http:`), after the config's `defaults.http` was
/// merged under them. A nil field was set nowhere: the transport's own default applies.
public struct HTTPSettings: Sendable, Hashable {
    /// Protocol version to ask for (`http_version:`).
    public enum HTTPVersion: String, Sendable, Hashable, CaseIterable {
        case http1_1 = "1.1"
        case http2 = "2"
        case http3 = "3"
    }

    /// A client certificate and its private key, PEM files, absolute paths.
    public struct ClientCertificate: Sendable, Hashable {
        /// The certificate (PEM).
        public var certificatePath: String
        /// Its private key (PEM).
        public var keyPath: String

        public init(certificatePath: String, keyPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    /// One header sent with every request of the site.
    public struct Header: Sendable, Hashable {
        /// Header name as written.
        public var name: String
        /// Header value, sent as is.
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The whole transfer, connect included.
    public var timeout: Duration?
    /// Connection setup only (DNS, TCP, TLS).
    public var connectTimeout: Duration?
    /// The User-Agent header. A loaded site always has one: its own `user_agent`, else
    /// `defaults.http.user_agent`, else ``SessionKeeperVersion/userAgent`` (SPEC section 3, "never none");
    /// nil only in settings built in code (the transport then sends none).
    public var userAgent: String?
    /// Headers in file order (site entries override defaults of the same name).
    public var headers: [Header]
    /// `socks5h://...`, `http://...`.
    public var proxy: String?
    /// curl `--resolve` entries, `HOST:PORT:ADDRESS`.
    public var resolve: [String]
    /// Absolute path of a CA bundle to trust instead of the system's.
    public var caFile: String?
    /// TLS client authentication.
    public var clientCertificate: ClientCertificate?
    /// Skip TLS verification (logged as a warning at every login).
    public var insecure: Bool
    /// nil lets libcurl choose.
    public var httpVersion: HTTPVersion?
    /// Most redirects one step follows (0...50).
    public var maxRedirects: Int?

    public init(
        timeout: Duration? = nil, connectTimeout: Duration? = nil, userAgent: String? = nil,
        headers: [Header] = [], proxy: String? = nil, resolve: [String] = [], caFile: String? = nil,
        clientCertificate: ClientCertificate? = nil, insecure: Bool = false, httpVersion: HTTPVersion? = nil,
        maxRedirects: Int? = nil
    ) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.userAgent = userAgent
        self.headers = headers
        self.proxy = proxy
        self.resolve = resolve
        self.caFile = caFile
        self.clientCertificate = clientCertificate
        self.insecure = insecure
        self.httpVersion = httpVersion
        self.maxRedirects = maxRedirects
    }
}
