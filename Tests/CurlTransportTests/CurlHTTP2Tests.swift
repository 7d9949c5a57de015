import CurlTransport
import Foundation
import HTTPTransport
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let nghttpdPath = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// HTTP/2 over TLS against nghttpd (Debian `nghttp2-server`), which serves a folder of files.
@Suite("CurlHTTPClient over HTTP/2", .enabled(if: nghttpdPath != nil, "needs nghttpd from Debian's nghttp2-server package"))
struct CurlHTTP2Tests {
    @Test("HTTP/2 is negotiated by ALPN; headers and body arrive; concurrent requests multiplex on it")
    func http2() async throws {
        let material = try await TLSMaterial.generate()
        defer { material.remove() }
        let root = material.directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("hello over h2\n".utf8).write(to: root.appendingPathComponent("hello.txt"))
        try Self.bigFile.write(to: root.appendingPathComponent("big.bin"))

        let port = try freeLoopbackPort()
        let server = try await startProgram(
            try #require(nghttpdPath), ["-a", "127.0.0.1", "-d", root.path, "\(port)", material.serverKey, material.serverCertificate],
            standardError: .discarded)
        server.closeInput()
        do {
            try await exerciseHTTP2(port: port, material: material)
        } catch {
            _ = await server.kill()
            throw error
        }
        _ = await server.kill()
    }

    /// 8 MiB that differ from one 4-byte word to the next, so that a lost, repeated or reordered part shows.
    static let bigFile: Data = {
        var data = Data(count: 8 * 1024 * 1024)
        data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            let words = raw.bindMemory(to: UInt32.self)
            for index in words.indices { words[index] = UInt32(truncatingIfNeeded: index &* 2_654_435_761) }
        }
        return data
    }()

    private func exerciseHTTP2(port: Int, material: TLSMaterial) async throws {
        try await waitUntilListening(port: port)

        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        var options = TransportOptions(timeout: .seconds(20), connectTimeout: .seconds(5))
        options.caFile = material.serverCertificate
        options.resolve = ["secure.test:\(port):127.0.0.1"]
        options.httpVersion = .http2
        let url = URL(string: "https://secure.test:\(port)/hello.txt")!

        let response = try await client.send(HTTPRequest(url: url), options: options)
        #expect(response.status == 200)
        #expect(response.httpVersion == "2")
        #expect(response.bodyText == "hello over h2\n")
        #expect(response.headers["Content-Length"] == "14")

        let missing = try await client.send(HTTPRequest(url: URL(string: "https://secure.test:\(port)/nope")!), options: options)
        #expect(missing.status == 404)

        let sharedOptions = options
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await client.send(HTTPRequest(url: url), options: sharedOptions).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 50)
        #expect(statuses.allSatisfy { $0 == 200 })

        // Streams over HTTP/2: two at once on the one connection, one read slowly (its stream pauses and
        // resumes), both arriving whole and in order.
        let bigURL = URL(string: "https://secure.test:\(port)/big.bin")!
        let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
            for slow in [true, false] {
                group.addTask {
                    let response = try await client.stream(StreamingRequest(url: bigURL), options: sharedOptions)
                    #expect(response.httpVersion == "2")
                    var body = Data()
                    var parts = 0
                    for try await part in response.body {
                        body.append(part)
                        parts += 1
                        if slow, parts % 8 == 0 { try await Task.sleep(for: .milliseconds(2)) }
                    }
                    return body
                }
            }
            return try await group.reduce(into: [Data]()) { $0.append($1) }
        }
        #expect(bodies.count == 2)
        #expect(bodies.allSatisfy { $0 == Self.bigFile })
    }
}

/// A port nobody listens on right now (bound to 0, read back, released).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw FixtureServer.StartFailure(description: "socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
        }
    }
    guard bound else { throw FixtureServer.StartFailure(description: "bind() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Polls until something accepts TCP connections on 127.0.0.1:`port` (5 s at most).
func waitUntilListening(port: Int) async throws {
    for _ in 0..<100 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        close(fd)
        if connected { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw FixtureServer.StartFailure(description: "nothing listens on port \(port)")
}
