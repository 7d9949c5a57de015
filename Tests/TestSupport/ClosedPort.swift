#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port that refuses connections for as long as this value lives: a socket bound to
/// 127.0.0.1 that never listens. A port freed by stopping a server is not that: any process on the machine
/// (another test's server, another suite run) may bind it at once and answer.
public final class ClosedPort: Sendable {
    /// The port number; a connection to 127.0.0.1 on it is refused.
    public let port: Int
    private let descriptor: Int32

    public init() throws(ClosedPortError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ClosedPortError(call: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw ClosedPortError(call: "bind", errno: code)
        }
        var actual = sockaddr_in()
        var actualLength = length
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        guard named == 0 else {
            let code = errno
            close(fd)
            throw ClosedPortError(call: "getsockname", errno: code)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: actual.sin_port))
    }

    deinit { close(descriptor) }
}

/// Why a ``ClosedPort`` could not be made.
public struct ClosedPortError: Error, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
}
