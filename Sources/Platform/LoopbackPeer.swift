#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CLinux

/// One end of a TCP connection: an IPv4 or IPv6 address and a port.
public struct TCPEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// An address as its bytes in network order.
    public enum Address: Sendable, Hashable {
        case ipv4([UInt8])
        case ipv6([UInt8])
    }

    public var address: Address
    public var port: UInt16

    /// nil unless `ipAddress` is an IPv4 dotted quad or an IPv6 address (without brackets).
    public init?(ipAddress: String, port: UInt16) {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        if inet_pton(AF_INET, ipAddress, &ipv4) == 1 {
            address = .ipv4(withUnsafeBytes(of: &ipv4) { Array($0) })
        } else if inet_pton(AF_INET6, ipAddress, &ipv6) == 1 {
            address = .ipv6(withUnsafeBytes(of: &ipv6) { Array($0) })
        } else {
            return nil
        }
        self.port = port
    }

    /// The endpoint at `address` and `port` (host byte order).
    public init(address: Address, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`, what a dual-stack socket reports for an IPv4
    /// peer) as the IPv4 address it stands for; any other endpoint as it is.
    public var unmapped: TCPEndpoint {
        guard case .ipv6(let bytes) = address, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF
        else { return self }
        var copy = self
        copy.address = .ipv4(Array(bytes[12..<16]))
        return copy
    }

    /// True for 127.0.0.0/8, `::1` and `::ffff:127.0.0.0/104`.
    public var isLoopback: Bool {
        switch unmapped.address {
        case .ipv4(let bytes): bytes[0] == 127
        case .ipv6(let bytes): bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    /// `127.0.0.1:8481`, `[::1]:8481`.
    public var description: String {
        switch address {
        case .ipv4(let bytes):
            return bytes.map(String.init).joined(separator: ".") + ":\(port)"
        case .ipv6(let bytes):
            var raw = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = bytes.withUnsafeBytes { source in inet_ntop(AF_INET6, source.baseAddress, &raw, socklen_t(raw.count)) }
            let text = String(decoding: raw.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return "[\(text)]:\(port)"
        }
    }
}

/// Who holds the other end of a TCP connection made over the loopback interface: the user that created the
/// peer's socket and, when this process may see it, a process holding that socket.
///
/// A TCP connection carries no credentials (SO_PEERCRED is for Unix sockets), but on one machine both ends
/// are sockets of the same kernel, which reports the owner of each through socket diagnostics
/// (NETLINK_SOCK_DIAG, sock_diag(7); `ss -e` shows the same `uid:` and `ino:`). The peer's socket is asked for
/// by the connection's exact addresses, so no other socket can answer.
public struct LoopbackPeer: Sendable, Hashable {
    /// The user that created the peer's socket (the effective user of the process that called socket(2)).
    public var uid: UInt32
    /// The peer socket's inode number (`socket:[INODE]` in `/proc/PID/fd`).
    public var socketInode: UInt64
    /// A process that holds the peer's socket open, when one is found among the processes whose file
    /// descriptors this process may read (all of them as root, its own user's otherwise); nil when none is.
    /// When several hold it (a socket inherited across fork), which one is found first is unspecified.
    public var pid: Int32?

    public init(uid: UInt32, socketInode: UInt64, pid: Int32?) {
        self.uid = uid
        self.socketInode = socketInode
        self.pid = pid
    }

    /// The peer of the accepted connection whose own end is `local` and whose other end is `remote`.
    ///
    /// - Parameters:
    ///   - local: this side's address and port (the listener's address, as the accepted socket reports it).
    ///   - remote: the peer's address and port.
    ///   - findingProcess: whether to look for the process in `/proc` (a scan of the file descriptors of the
    ///     processes this process may read, those of the peer's user first); false leaves ``pid`` nil.
    /// - Throws: ``LoopbackPeerError``: `.notLoopback` when the peer is not on this machine's loopback
    ///   addresses, `.notFound` when the kernel knows no such connection (it closed, or the addresses are not
    ///   those of a connection), `.system` when the kernel could not be asked.
    public static func lookup(
        local: TCPEndpoint, remote: TCPEndpoint, findingProcess: Bool = true
    ) throws(LoopbackPeerError) -> LoopbackPeer {
        let local = local.unmapped
        let remote = remote.unmapped
        guard remote.isLoopback else { throw .notLoopback(remote) }
        let (uid, inode) = try SocketDiagnostics.owner(source: remote, destination: local)
        let pid = findingProcess ? ProcessSockets.holder(ofSocketInode: inode, preferringUser: uid) : nil
        return LoopbackPeer(uid: uid, socketInode: inode, pid: pid)
    }
}

/// Why ``LoopbackPeer/lookup(local:remote:findingProcess:)`` found no peer.
public enum LoopbackPeerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer's address is not a loopback address: its user is on another machine.
    case notLoopback(TCPEndpoint)
    /// No process holds a TCP socket with these addresses (the connection is gone or closing, or never
    /// existed).
    case notFound(local: TCPEndpoint, remote: TCPEndpoint)
    /// The address families of the two ends differ.
    case mixedFamilies(local: TCPEndpoint, remote: TCPEndpoint)
    /// The kernel could not be asked, or answered something unexpected.
    case system(SystemError)

    public var description: String {
        switch self {
        case .notLoopback(let remote): "the peer \(remote) is not on a loopback address"
        case .notFound(let local, let remote): "no TCP connection from \(remote) to \(local)"
        case .mixedFamilies(let local, let remote): "\(remote) and \(local) are of different address families"
        case .system(let error): "socket diagnostics: \(error)"
        }
    }
}

/// The NETLINK_SOCK_DIAG exchange.
private enum SocketDiagnostics {
    /// The uid and inode of the TCP socket whose own address is `source` and whose peer is `destination`.
    static func owner(source: TCPEndpoint, destination: TCPEndpoint) throws(LoopbackPeerError) -> (UInt32, UInt64) {
        let family: Int32
        let sourceBytes: [UInt8]
        let destinationBytes: [UInt8]
        switch (source.address, destination.address) {
        case (.ipv4(let s), .ipv4(let d)): (family, sourceBytes, destinationBytes) = (AF_INET, s, d)
        case (.ipv6(let s), .ipv6(let d)): (family, sourceBytes, destinationBytes) = (AF_INET6, s, d)
        default: throw .mixedFamilies(local: destination, remote: source)
        }
        let fd = Glibc.socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), clinux_netlink_sock_diag())
        guard fd >= 0 else { throw .system(SystemError(call: "socket(AF_NETLINK)", errno: Glibc.errno)) }
        defer { Syscall.close(fd) }

        var request = clinux_inet_diag_request()
        sourceBytes.withUnsafeBufferPointer { sourcePointer in
            destinationBytes.withUnsafeBufferPointer { destinationPointer in
                clinux_inet_diag_request_make(
                    &request, family, sourcePointer.baseAddress, source.port, destinationPointer.baseAddress,
                    destination.port, 1)
            }
        }
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let sent = withUnsafePointer(to: &kernel) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                withUnsafeBytes(of: &request) { bytes in
                    Glibc.sendto(fd, bytes.baseAddress, bytes.count, 0, address, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        guard sent >= 0 else { throw .system(SystemError(call: "sendto(NETLINK_SOCK_DIAG)", errno: Glibc.errno)) }

        // One answer: an inet_diag_msg (with no extensions asked for, under 100 bytes) or an error message.
        var answer = [UInt8](repeating: 0, count: 8192)
        var count = 0
        while true {
            count = answer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count >= 0 { break }
            let code = Glibc.errno
            if code != EINTR { throw .system(SystemError(call: "recv(NETLINK_SOCK_DIAG)", errno: code)) }
        }
        let parsed = answer.withUnsafeBytes { bytes in parse(UnsafeRawBufferPointer(rebasing: bytes[0..<count])) }
        switch parsed {
        // A socket no process holds any more (closed, or in TIME_WAIT) has inode 0 and, in TIME_WAIT, uid 0:
        // its owner cannot be named, and must never be taken for root.
        case .owner(_, 0): throw .notFound(local: destination, remote: source)
        case .owner(let uid, let inode): return (uid, inode)
        case .error(ENOENT): throw .notFound(local: destination, remote: source)
        case .error(let code): throw .system(SystemError(call: "NETLINK_SOCK_DIAG", errno: code))
        case .malformed: throw .system(SystemError(call: "recv(NETLINK_SOCK_DIAG)", errno: EPROTO))
        }
    }

    private enum Answer {
        case owner(uid: UInt32, inode: UInt64)
        /// NLMSG_ERROR with this errno.
        case error(Int32)
        case malformed
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> Answer {
        let headerLength = Int(clinux_netlink_header_length())
        guard bytes.count >= headerLength else { return .malformed }
        let header = bytes.loadUnaligned(as: nlmsghdr.self)
        let body = UnsafeRawBufferPointer(rebasing: bytes[headerLength...])
        if Int32(header.nlmsg_type) == clinux_netlink_error() {
            guard body.count >= MemoryLayout<Int32>.size else { return .malformed }
            return .error(-body.loadUnaligned(as: Int32.self))
        }
        guard Int32(header.nlmsg_type) == clinux_sock_diag_by_family(), body.count >= MemoryLayout<inet_diag_msg>.size else {
            return .malformed
        }
        let message = body.loadUnaligned(as: inet_diag_msg.self)
        return .owner(uid: message.idiag_uid, inode: UInt64(message.idiag_inode))
    }
}

/// Finding a process by a socket it holds, through `/proc/PID/fd`.
private enum ProcessSockets {
    /// A process holding the socket with `inode`: the processes owned by `user` are searched first (the
    /// socket's creator is usually still its holder), newest first, then the others; of a parent and a child
    /// that both hold it, the parent. nil when none of the
    /// processes this process may read holds it.
    static func holder(ofSocketInode inode: UInt64, preferringUser user: UInt32) -> Int32? {
        guard let entries = try? Syscall.listDirectory("/proc") else { return nil }
        let pids = entries.compactMap { Int32($0) }.sorted(by: >)
        let target = Array("socket:[\(inode)]".utf8)
        var others: [Int32] = []
        for pid in pids {
            guard let owner = try? Syscall.stat("/proc/\(pid)").ownerUID else { continue }
            guard owner == user else {
                others.append(pid)
                continue
            }
            if holds(pid, target) { return eldestHolder(from: pid, target) }
        }
        return others.first { holds($0, target) }.map { eldestHolder(from: $0, target) }
    }

    /// A child holds its parent's descriptors from its fork until its exec closes them (or for good, when they
    /// are not close-on-exec): when the parent holds the socket too, the parent is the one that opened it.
    private static func eldestHolder(from pid: Int32, _ target: [UInt8]) -> Int32 {
        var holder = pid
        for _ in 0..<8 {
            guard let parent = parent(of: holder), parent > 1, holds(parent, target) else { break }
            holder = parent
        }
        return holder
    }

    /// The parent of `pid`: the field after the state in `/proc/PID/stat` ("pid (comm) state ppid ..."; the
    /// command name may hold spaces and parentheses, so the fields are read after its last parenthesis).
    private static func parent(of pid: Int32) -> Int32? {
        guard let stat = try? DurableFile.read("/proc/\(pid)/stat", limit: 4096),
              let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 1 else { return nil }
        return Int32(String(decoding: fields[1], as: UTF8.self))
    }

    /// Whether one of `pid`'s file descriptors links to `target` (`socket:[INODE]`). A process this one may
    /// not read, or one that exited meanwhile, holds nothing.
    private static func holds(_ pid: Int32, _ target: [UInt8]) -> Bool {
        let folder = "/proc/\(pid)/fd"
        guard let descriptors = try? Syscall.listDirectory(folder) else { return false }
        var link = [CChar](repeating: 0, count: 64)
        for descriptor in descriptors {
            let count = Glibc.readlink(folder + "/" + descriptor, &link, link.count)
            guard count == target.count else { continue }
            if link.withUnsafeBytes({ $0.prefix(count).elementsEqual(target) }) { return true }
        }
        return false
    }
}
