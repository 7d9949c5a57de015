#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
// CLinux's shim includes <sys/socket.h> too, and a release build may take `SOCK_*` from its module rather than
// Glibc's: importing both finds them either way.
internal import CLinux
import Foundation

/// systemd's `Type=notify` protocol without libsystemd (sd_notify(3)): one datagram per state change to
/// the socket named by `NOTIFY_SOCKET` (a path, or an abstract name starting with `@`). Without
/// `NOTIFY_SOCKET` every call does nothing, so the daemon runs the same under systemd and by hand.
public struct ServiceNotifier: Sendable {
    /// The socket's address as systemd gave it; nil when not run by systemd.
    public let socketPath: String?
    /// Half the watchdog interval (`WATCHDOG_USEC`), when systemd asks for keep-alive pings.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if path != nil, let text = environment["WATCHDOG_USEC"], let micros = UInt64(text), micros > 0,
           environment["WATCHDOG_PID"].map({ $0 == String(getpid()) }) ?? true {
            watchdogInterval = .microseconds(Int64(micros / 2))
        } else {
            watchdogInterval = nil
        }
    }

    /// `READY=1`, with a `STATUS=` line.
    public func ready(status: String) throws(SystemError) { try send("READY=1\nSTATUS=\(status)") }
    /// `RELOADING=1` with the monotonic time systemd asks for (systemd 253 and later check it).
    public func reloading() throws(SystemError) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let micros = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        try send("RELOADING=1\nMONOTONIC_USEC=\(micros)")
    }
    /// `STOPPING=1`.
    public func stopping() throws(SystemError) { try send("STOPPING=1") }
    /// `STATUS=...` alone: a line `systemctl status` shows.
    public func status(_ text: String) throws(SystemError) { try send("STATUS=\(text)") }
    /// `WATCHDOG=1`: the service is alive.
    public func watchdog() throws(SystemError) { try send("WATCHDOG=1") }

    /// Sends one datagram of `KEY=VALUE` lines.
    public func send(_ message: String) throws(SystemError) {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError(call: "socket", path: socketPath, errno: errno) }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        // An abstract socket's name starts with a NUL byte instead of '@' and is not NUL-terminated.
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { throw SystemError(call: "sendto", path: socketPath, errno: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (abstract ? 0 : 1))
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { buffer in
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        guard sent >= 0 else { throw SystemError(call: "sendto", path: socketPath, errno: errno) }
    }
}
