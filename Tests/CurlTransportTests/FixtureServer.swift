import Foundation
import CurlTransport
import HTTPTransport
import TestSupport
import Testing

/// A running `Fixtures/server.py`: started on 127.0.0.1 (or `--host`) port 0 (or `--port`), the port read from its
/// first stdout line.
final class FixtureServer: Sendable {
    let port: Int
    private let program: SpawnedProgram

    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    private init(port: Int, program: SpawnedProgram) {
        self.port = port
        self.program = program
    }

    static func start(arguments: [String] = []) async throws -> FixtureServer {
        guard let script = Bundle.module.url(forResource: "server", withExtension: "py", subdirectory: "Fixtures") else {
            throw StartFailure(description: "Fixtures/server.py is missing from the test bundle")
        }
        let program = try await SpawnedProgram.start("/usr/bin/env", ["python3", script.path, "--port", "0"] + arguments)
        guard let port = Int(program.firstLine.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            await program.kill()
            throw StartFailure(description: "server.py did not print its port")
        }
        return FixtureServer(port: port, program: program)
    }

    func url(_ path: String, scheme: String = "http", host: String = "127.0.0.1") -> URL {
        URL(string: "\(scheme)://\(host):\(port)\(path)")!
    }

    /// Kills the server (it holds nothing to flush) and waits for it; a server a failing test left running goes when
    /// the test lets go of it.
    func stop() async {
        await program.kill()
    }
}

/// Runs `body` with a fresh server and client; both are stopped afterwards, whatever `body` did.
func withServer<T>(
    arguments: [String] = [], _ body: (FixtureServer, CurlHTTPClient) async throws -> T
) async throws -> T {
    let server = try await FixtureServer.start(arguments: arguments)
    do {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let result = try await body(server, client)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// The server's view of a request, as `/echo` reports it.
struct Echo: Decodable {
    var method: String
    var path: String
    var headers: [[String]]
    var body_length: Int
    var body: String
    var proxied: Bool
    var client_cn: String?
    /// The address the answering server is bound to.
    var server: String

    var headerNames: [String] { headers.map { $0[0].lowercased() } }
    func header(_ name: String) -> String? { headers.first { $0[0].lowercased() == name.lowercased() }?[1] }

    init(_ response: HTTPResponse) throws { self = try JSONDecoder().decode(Echo.self, from: response.body) }
}

struct Stats: Decodable {
    var connections: Int
    var requests: Int
    /// `/big` answers whose client went away before their end.
    var aborted: Int
}

/// Throws unless `operation` fails with a TransportError; returns that error.
func expectTransportError(
    _ operation: () async throws(TransportError) -> HTTPResponse, sourceLocation: SourceLocation = #_sourceLocation
) async -> TransportError? {
    do {
        let response = try await operation()
        Issue.record("expected a TransportError, got status \(response.status)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Self-signed server certificate and a client CA with one client certificate, made with the openssl CLI.
struct TLSMaterial {
    let directory: URL
    var serverCertificate: String { directory.appendingPathComponent("server.pem").path }
    var serverKey: String { directory.appendingPathComponent("server.key").path }
    var clientCA: String { directory.appendingPathComponent("client-ca.pem").path }
    var clientCertificate: String { directory.appendingPathComponent("client.pem").path }
    var clientKey: String { directory.appendingPathComponent("client.key").path }

    static func generate() async throws -> TLSMaterial {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("curl-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let material = TLSMaterial(directory: directory)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
        try await openssl(["req", "-x509"] + ec + [
            "-keyout", material.serverKey, "-out", material.serverCertificate, "-subj", "/CN=secure.test",
            "-addext", "subjectAltName=DNS:secure.test,IP:127.0.0.1",
        ])
        let caKey = directory.appendingPathComponent("client-ca.key").path
        try await openssl(["req", "-x509"] + ec + ["-keyout", caKey, "-out", material.clientCA, "-subj", "/CN=Fixture Client CA"])
        let request = directory.appendingPathComponent("client.csr").path
        try await openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", material.clientKey, "-out", request, "-subj", "/CN=fixture-client"])
        try await openssl(["x509", "-req", "-in", request, "-CA", material.clientCA, "-CAkey", caKey, "-CAcreateserial",
                     "-out", material.clientCertificate, "-days", "2"])
        return material
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// Runs the openssl CLI to its end on a dedicated thread.
    private static func openssl(_ arguments: [String]) async throws {
        let result = try await runProgram("/usr/bin/env", ["openssl"] + arguments, standardError: .discarded)
        guard result.status == 0 else {
            throw FixtureServer.StartFailure(description: "openssl \(arguments[0]) failed with \(result.status)")
        }
    }
}
