import HTTPTransport
import SiteConfig

extension TransportOptions {
    /// The transport settings a site's `http:` asks for; unset fields keep the transport's defaults.
    public init(site settings: HTTPSettings) {
        self.init()
        if let timeout = settings.timeout { self.timeout = timeout }
        if let connectTimeout = settings.connectTimeout { self.connectTimeout = connectTimeout }
        userAgent = settings.userAgent
        proxy = settings.proxy
        resolve = settings.resolve
        caFile = settings.caFile
        clientCertificate = settings.clientCertificate.map {
            ClientCertificate(certificatePath: $0.certificatePath, keyPath: $0.keyPath)
        }
        insecure = settings.insecure
        httpVersion = settings.httpVersion.flatMap { HTTPVersion(rawValue: $0.rawValue) }
    }
}
