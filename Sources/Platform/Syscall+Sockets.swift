#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
// CLinux's shim includes <sys/socket.h> too, and a release build may take `SOCK_*` from its module rather than
// Glibc's: importing both finds them either way.
internal import CLinux

/// The socket calls of the Unix-socket HTTP client (``UnixSocketHTTPClient``).
extension Syscall {
    /// A connected stream socket to the Unix socket at `path` (close-on-exec). `sendTimeout` bounds the
    /// connect itself (a full listen backlog makes it wait) and every later write.
    ///
    /// Throws errno `ENAMETOOLONG` for a path that does not fit `sockaddr_un` (107 bytes on Linux).
    public static func connectUnixSocket(_ path: String, sendTimeout: Duration) throws(SystemError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else {
            throw SystemError(call: "connect", path: path, errno: bytes.isEmpty ? ENOENT : ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError(call: "socket", path: path, errno: Glibc.errno) }
        var timeout = timeval(duration: sendTimeout)
        if setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) != 0 {
            let code = Glibc.errno
            close(fd)
            throw SystemError(call: "setsockopt", path: path, errno: code)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        if result != 0 {
            let code = Glibc.errno
            close(fd)
            // Interrupted, the connect would go on in the background; a Unix socket's connect is over at
            // once or not at all, so the caller's retry costs nothing.
            throw SystemError(call: "connect", path: path, errno: code)
        }
        return fd
    }

    /// Waits until `fd` has something to read (data, the end of the stream or an error) or `timeout`
    /// passes; false when the time ran out. Retries on EINTR with the time that is left.
    public static func waitReadable(_ fd: Int32, timeout: Duration, path: String?) throws(SystemError) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let left = clock.now.duration(to: deadline)
            let milliseconds = max(0, Int32(clamping: left.wholeMilliseconds))
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&entry, 1, left <= .zero ? 0 : max(1, milliseconds))
            if ready > 0 { return true }
            if ready == 0 { return false }
            let code = Glibc.errno
            if code != EINTR { throw SystemError(call: "poll", path: path, errno: code) }
        }
    }

    /// One read(2) into `buffer` (as many bytes as it holds at most): the count read, 0 at the end of the
    /// stream.
    public static func readSome(_ fd: Int32, into buffer: inout [UInt8], path: String?) throws(SystemError) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in Glibc.read(fd, raw.baseAddress, raw.count) }
            if count >= 0 { return count }
            let code = Glibc.errno
            if code != EINTR { throw SystemError(call: "read", path: path, errno: code) }
        }
    }

    /// shutdown(2) both ways: a read blocked on `fd` in another thread returns the end of the stream.
    public static func shutdownSocket(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}

extension timeval {
    init(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(max(0, seconds)), tv_usec: Int(max(0, attoseconds / 1_000_000_000_000)))
    }
}

extension Syscall {
    /// Sends all of `bytes` on a socket with MSG_NOSIGNAL, so a peer that went away is EPIPE, never a
    /// SIGPIPE that ends the process.
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8], path: String?) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent >= 0 {
                offset += sent
                continue
            }
            let code = Glibc.errno
            if code != EINTR { throw SystemError(call: "send", path: path, errno: code) }
        }
    }
}
