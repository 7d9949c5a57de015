import Foundation
import Locking
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `LoopbackPeer.lookup` on real TCP connections over 127.0.0.1 and ::1: the kernel's socket diagnostics name
/// the peer's user, and `/proc` its process.
@Suite struct LoopbackPeerTests {
    @Test("a connection made by this process is ours: our uid, our pid, the client socket's inode",
          arguments: ["127.0.0.1", "::1"])
    func ownConnection(address: String) throws {
        let listener = try TestSocket.listen(on: address)
        defer { listener.close() }
        let client = try TestSocket.connect(to: listener.localEndpoint)
        defer { client.close() }
        let accepted = try listener.accept()
        defer { accepted.close() }

        let peer = try LoopbackPeer.lookup(local: accepted.localEndpoint, remote: accepted.remoteEndpoint)
        #expect(peer.uid == getuid())
        #expect(peer.pid == getpid())
        #expect(peer.socketInode == client.inode)

        let withoutProcess = try LoopbackPeer.lookup(
            local: accepted.localEndpoint, remote: accepted.remoteEndpoint, findingProcess: false)
        #expect(withoutProcess.pid == nil)
        #expect(withoutProcess.uid == getuid())
        // Asked the other way round, the kernel names our own end: the accepted socket.
        let ownEnd = try LoopbackPeer.lookup(local: accepted.remoteEndpoint, remote: accepted.localEndpoint)
        #expect(ownEnd.socketInode == accepted.inode)
    }

    @Test("a connection made by a process running as nobody is nobody's, with that process's pid",
          .enabled(if: getuid() == 0, "only root can start a process as another user"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser"), "needs runuser (util-linux)"),
          arguments: ["127.0.0.1", "::1"])
    func connectionOfAnotherUser(address: String) async throws {
        let listener = try TestSocket.listen(on: address)
        defer { listener.close() }
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        // The child connects, sends its pid, and waits until this side closes the connection.
        let script = """
            import os, socket, sys
            s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
            s.sendall(str(os.getpid()).encode() + b"\\n")
            s.recv(1)
            """
        let child = ChildProcess(
            executable: "/usr/sbin/runuser",
            arguments: ["-u", "nobody", "--", "/usr/bin/python3", "-c", script, address, String(listener.localEndpoint.port)],
            environment: .minimal(from: ProcessInfo.processInfo.environment), timeout: .seconds(30), outputLimit: 4096,
            outputOverflow: .truncate)
        let errors = Locked<[String]>([])
        let ended = Locked(false)
        let run = Task {
            defer { ended.withLock { $0 = true } }
            return try await child.run { line in errors.withLock { $0.append(line) } }
        }
        // No deadline of its own: the child starts only once its task gets a thread of the cooperative pool,
        // which other tests may hold for a long time; it then has its own timeout.
        let connected = await onDedicatedThread { () -> Result<(TestSocket, Int32), any Error> in
            Result {
                let accepted = try listener.accept(timeout: nil, until: { ended.withLock { $0 } })
                return (accepted, try accepted.readLine().flatMap { Int32($0) } ?? -1)
            }
        }
        guard case .success(let (accepted, childPID)) = connected else {
            run.cancel()
            let outcome = try? await run.value
            Issue.record("the child did not connect: \(connected), \(outcome?.termination.description ?? "-"), \(errors.withLock { $0 })")
            return
        }
        let peer = try LoopbackPeer.lookup(local: accepted.localEndpoint, remote: accepted.remoteEndpoint)
        accepted.close()
        let result = try await run.value
        #expect(result.termination == .exited(0))
        #expect(peer.uid == nobody)
        #expect(peer.uid != getuid())
        #expect(peer.pid == childPID, "the python process, not runuser")
    }

    @Test("a socket a child inherited is named by the parent that opened it")
    func inheritedSocket() async throws {
        let listener = try TestSocket.listen(on: "127.0.0.1")
        defer { listener.close() }
        // The process connects, then forks a child that keeps the socket (as a child does between its fork and
        // its exec, or for good without close-on-exec); both wait until this side closes the connection.
        let script = """
            import os, socket, sys
            s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
            child = os.fork()
            if child == 0:
                s.recv(1)
                os._exit(0)
            s.sendall(f"{os.getpid()} {child}".encode() + b"\\n")
            s.recv(1)
            os.waitpid(child, 0)
            """
        let process = ChildProcess(
            executable: "/usr/bin/python3", arguments: ["-c", script, "127.0.0.1", String(listener.localEndpoint.port)],
            environment: .minimal(from: ProcessInfo.processInfo.environment), timeout: .seconds(30), outputLimit: 4096,
            outputOverflow: .truncate)
        let ended = Locked(false)
        let run = Task {
            defer { ended.withLock { $0 = true } }
            return try await process.run()
        }
        let connected = await onDedicatedThread { () -> Result<(TestSocket, [Int32]), any Error> in
            Result {
                let accepted = try listener.accept(timeout: nil, until: { ended.withLock { $0 } })
                return (accepted, (try accepted.readLine() ?? "").split(separator: " ").compactMap { Int32($0) })
            }
        }
        guard case .success(let (accepted, pids)) = connected, pids.count == 2 else {
            run.cancel()
            Issue.record("the process did not connect: \(connected)")
            return
        }
        let peer = try LoopbackPeer.lookup(local: accepted.localEndpoint, remote: accepted.remoteEndpoint)
        accepted.close()
        #expect(try await run.value.termination == .exited(0))
        #expect(peer.pid == pids[0], "the parent \(pids[0]), not its child \(pids[1])")
    }

    @Test("a connection the kernel does not know is a typed not-found error", arguments: ["127.0.0.1", "::1"])
    func unknownConnection(address: String) throws {
        // A listener that accepts nothing yet and a port nothing uses: no connection has this pair.
        let listener = try TestSocket.listen(on: address)
        defer { listener.close() }
        let remote = try #require(TCPEndpoint(ipAddress: address, port: 9))
        #expect(throws: LoopbackPeerError.notFound(local: listener.localEndpoint, remote: remote)) {
            try LoopbackPeer.lookup(local: listener.localEndpoint, remote: remote)
        }
    }

    @Test("a peer that already closed its socket is not found (never taken for root)")
    func closedPeer() throws {
        let listener = try TestSocket.listen(on: "127.0.0.1")
        defer { listener.close() }
        let client = try TestSocket.connect(to: listener.localEndpoint)
        let accepted = try listener.accept()
        defer { accepted.close() }
        client.close()
        // The client's socket lives on in the kernel (FIN_WAIT2) but no process holds it: it has no owner to name.
        #expect(throws: LoopbackPeerError.notFound(local: accepted.localEndpoint, remote: accepted.remoteEndpoint)) {
            try LoopbackPeer.lookup(local: accepted.localEndpoint, remote: accepted.remoteEndpoint)
        }
    }

    @Test("a peer that is not on a loopback address is refused before the kernel is asked")
    func notLoopback() throws {
        let local = try #require(TCPEndpoint(ipAddress: "127.0.0.1", port: 8481))
        let remote = try #require(TCPEndpoint(ipAddress: "192.0.2.7", port: 40000))
        #expect(throws: LoopbackPeerError.notLoopback(remote)) { try LoopbackPeer.lookup(local: local, remote: remote) }
    }

    @Test("endpoints: parsing, printing, IPv4-mapped IPv6 and loopback ranges")
    func endpoints() throws {
        let v4 = try #require(TCPEndpoint(ipAddress: "127.3.2.1", port: 80))
        #expect(v4.description == "127.3.2.1:80")
        #expect(v4.isLoopback)
        let v6 = try #require(TCPEndpoint(ipAddress: "::1", port: 443))
        #expect(v6.description == "[::1]:443")
        #expect(v6.isLoopback)
        let mapped = try #require(TCPEndpoint(ipAddress: "::ffff:127.0.0.1", port: 8))
        #expect(mapped.unmapped == TCPEndpoint(ipAddress: "127.0.0.1", port: 8))
        #expect(mapped.isLoopback)
        #expect(TCPEndpoint(ipAddress: "10.1.2.3", port: 1)?.isLoopback == false)
        #expect(TCPEndpoint(ipAddress: "::2", port: 1)?.isLoopback == false)
        #expect(TCPEndpoint(ipAddress: "localhost", port: 1) == nil)
        #expect(TCPEndpoint(ipAddress: "[::1]", port: 1) == nil)
    }
}

/// A TCP socket made with the system calls themselves, so the tests see exactly what the kernel sees.
private struct TestSocket: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let fd: Int32

    static func listen(on address: String) throws -> TestSocket {
        let endpoint = try #require(TCPEndpoint(ipAddress: address, port: 0))
        let socket = try make(for: endpoint)
        try socket.check(withSockaddr(endpoint) { Glibc.bind(socket.fd, $0, $1) }, "bind")
        try socket.check(Glibc.listen(socket.fd, 8), "listen")
        return socket
    }

    static func connect(to endpoint: TCPEndpoint) throws -> TestSocket {
        let socket = try make(for: endpoint)
        try socket.check(withSockaddr(endpoint) { Glibc.connect(socket.fd, $0, $1) }, "connect")
        return socket
    }

    private static func make(for endpoint: TCPEndpoint) throws -> TestSocket {
        let family = if case .ipv6 = endpoint.address { AF_INET6 } else { AF_INET }
        let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        return TestSocket(fd: fd)
    }

    /// Waits for a connection until `givingUp` says none will come, or `timeout` passed (nil: no limit).
    func accept(timeout: Duration? = .seconds(10), until givingUp: () -> Bool = { false }) throws -> TestSocket {
        let clock = ContinuousClock()
        let start = clock.now
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while Glibc.poll(&ready, 1, 100) != 1 {
            if givingUp() { throw Failure(description: "no connection: the connecting process ended") }
            if let timeout, clock.now - start > timeout { throw Failure(description: "no connection within \(timeout)") }
        }
        let accepted = Glibc.accept(fd, nil, nil)
        guard accepted >= 0 else { throw Failure(description: "accept: errno \(errno)") }
        return TestSocket(fd: accepted)
    }

    /// One line the peer sent (at most 64 bytes), without its newline.
    func readLine() throws -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 64 {
            let count = Glibc.recv(fd, &byte, 1, 0)
            guard count == 1 else { break }
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    func close() { _ = Glibc.close(fd) }

    var localEndpoint: TCPEndpoint { endpoint(getsockname) }
    var remoteEndpoint: TCPEndpoint { endpoint(getpeername) }

    var inode: UInt64 {
        var info = stat()
        _ = fstat(fd, &info)
        return UInt64(info.st_ino)
    }

    private func endpoint(_ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> TCPEndpoint {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) } }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let port: UInt16
        if Int32(storage.ss_family) == AF_INET6 {
            var address = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
            port = UInt16(bigEndian: address.sin6_port)
        } else {
            var address = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in.self) }
            inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
            port = UInt16(bigEndian: address.sin_port)
        }
        let ip = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return TCPEndpoint(ipAddress: ip, port: port)!
    }

    private static func withSockaddr<T>(_ endpoint: TCPEndpoint, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch endpoint.address {
        case .ipv4(let bytes):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = endpoint.port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6(let bytes):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = endpoint.port.bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    private func check(_ result: Int32, _ call: String) throws {
        guard result == 0 else { throw Failure(description: "\(call): errno \(errno)") }
    }
}
