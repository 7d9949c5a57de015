import CurlTransport
import Foundation
import HTTPTransport
import Testing

/// HTTPS against the fixture server with certificates made by the openssl CLI for this run.
@Suite("CurlHTTPClient over TLS")
struct CurlTLSTests {
    private static let options = TransportOptions(timeout: .seconds(20), connectTimeout: .seconds(5))

    private func withTLSServer(requireClientCertificate: Bool = false,
                               _ body: (FixtureServer, CurlHTTPClient, TLSMaterial) async throws -> Void) async throws {
        let material = try await TLSMaterial.generate()
        defer { material.remove() }
        var arguments = ["--tls-cert", material.serverCertificate, "--tls-key", material.serverKey]
        if requireClientCertificate { arguments += ["--client-ca", material.clientCA] }
        try await withServer(arguments: arguments) { server, client in try await body(server, client, material) }
    }

    @Test("a self-signed certificate is refused by default")
    func selfSignedRefused() async throws {
        try await withTLSServer { server, client, _ in
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: server.url("/echo", scheme: "https")), options: Self.options)
            }
            #expect(error?.kind == .tls)
            #expect(error?.isUnreachable == true)
            #expect(error?.message.contains("certificate") == true, "\(error?.message ?? "")")
        }
    }

    @Test("ca_file trusts it; resolve keeps the name for SNI and host verification")
    func caFileAccepted() async throws {
        try await withTLSServer { server, client, material in
            var options = Self.options
            options.caFile = material.serverCertificate
            options.resolve = ["secure.test:\(server.port):127.0.0.1"]
            let response = try await client.send(
                HTTPRequest(url: server.url("/echo", scheme: "https", host: "secure.test")), options: options)
            #expect(response.status == 200)
            #expect(try Echo(response).header("Host") == "secure.test:\(server.port)")

            // The same certificate does not name other.test: host verification fails even with the CA trusted.
            options.resolve = ["other.test:\(server.port):127.0.0.1"]
            let mismatch = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: server.url("/echo", scheme: "https", host: "other.test")),
                                      options: options)
            }
            #expect(mismatch?.kind == .tls)
        }
    }

    @Test("insecure skips verification")
    func insecureAccepted() async throws {
        try await withTLSServer { server, client, _ in
            var options = Self.options
            options.insecure = true
            let response = try await client.send(HTTPRequest(url: server.url("/echo", scheme: "https")), options: options)
            #expect(response.status == 200)
            #expect(try Echo(response).method == "GET")
        }
    }

    @Test("a client certificate is presented when configured; without it the server's refusal is a TLS error")
    func clientCertificate() async throws {
        try await withTLSServer(requireClientCertificate: true) { server, client, material in
            var options = Self.options
            options.caFile = material.serverCertificate
            options.clientCertificate = .init(certificatePath: material.clientCertificate, keyPath: material.clientKey)
            let response = try await client.send(HTTPRequest(url: server.url("/echo", scheme: "https")), options: options)
            #expect(try Echo(response).client_cn == "fixture-client")

            options.clientCertificate = nil
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: server.url("/echo", scheme: "https")), options: options)
            }
            #expect(error?.kind == .tls, "\(error?.description ?? "")")
        }
    }
}
