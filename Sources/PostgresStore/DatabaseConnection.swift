import Logging
import NIOCore
import Platform
internal import NIOSSL
internal import PostgresNIO
import SiteConfig

/// postgres-nio's configurations for a ``SiteConfig/DatabaseURL``: the pool's for statements, a single
/// connection's for LISTEN, and one for the probe that opening a store makes first. Built once per store;
/// creating the TLS context reads certificate files.
struct DatabaseConnection: Sendable {
    let url: DatabaseURL
    let client: PostgresClient.Configuration
    let listener: PostgresConnection.Configuration
    let probe: PostgresConnection.Configuration

    init(_ url: DatabaseURL, poolSize: Int) throws(PostgresStoreError) {
        self.url = url
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        switch url.tls {
        case .disable, .prefer, .require:
            tlsConfiguration.certificateVerification = .none
        case .verifyFull:
            tlsConfiguration.certificateVerification = .fullVerification
        }
        if let file = url.rootCertificateFile {
            tlsConfiguration.trustRoots = .file(file)
        }
        var client: PostgresClient.Configuration
        var listener: PostgresConnection.Configuration
        if let socket = url.socketPath {
            client = PostgresClient.Configuration(unixSocketPath: socket, username: url.user, password: url.password, database: url.database)
            listener = PostgresConnection.Configuration(unixSocketPath: socket, username: url.user, password: url.password, database: url.database)
        } else {
            let host = url.host ?? "localhost"
            let context: NIOSSLContext?
            do {
                context = url.tls == .disable ? nil : try NIOSSLContext(configuration: tlsConfiguration)
            } catch {
                throw PostgresStoreError(.configuration, "TLS for \(url.place): \(error)")
            }
            let clientTLS: PostgresClient.Configuration.TLS
            let listenerTLS: PostgresConnection.Configuration.TLS
            switch (url.tls, context) {
            case let (.prefer, context?):
                clientTLS = .prefer(tlsConfiguration)
                listenerTLS = .prefer(context)
            case let (.require, context?), let (.verifyFull, context?):
                clientTLS = .require(tlsConfiguration)
                listenerTLS = .require(context)
            default:
                clientTLS = .disable
                listenerTLS = .disable
            }
            client = PostgresClient.Configuration(
                host: host, port: url.port, username: url.user, password: url.password, database: url.database, tls: clientTLS)
            listener = PostgresConnection.Configuration(
                host: host, port: url.port, username: url.user, password: url.password, database: url.database, tls: listenerTLS)
            if url.tls == .verifyFull {
                client.options.tlsServerName = host
                listener.options.tlsServerName = host
            }
        }
        client.options.connectTimeout = url.connectTimeout
        client.options.maximumConnections = poolSize
        client.options.minimumConnections = 0
        client.options.additionalStartupParameters = [("application_name", url.applicationName)]
        listener.options.connectTimeout = TimeAmount.milliseconds(url.connectTimeout.wholeMilliseconds)
        var probe = listener
        probe.options.additionalStartupParameters = [("application_name", url.applicationName)]
        listener.options.additionalStartupParameters = [("application_name", url.applicationName + " listener")]
        self.client = client
        self.listener = listener
        self.probe = probe
    }
}
