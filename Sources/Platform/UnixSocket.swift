#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who is at the other end of a Unix-domain socket connection, as the kernel saw it at `connect(2)`
/// (SO_PEERCRED), plus the process's supplementary groups.
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups of the peer process, read from `/proc/PID/status` (`Groups:`) when the
    /// connection was accepted. Empty when they could not be read, or when the process behind the pid is no
    /// longer the peer's (it exited and the pid was reused: its `Uid:` differs).
    public var supplementaryGroups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, supplementaryGroups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.supplementaryGroups = supplementaryGroups
    }

    /// The primary and supplementary groups.
    public var allGroups: [UInt32] { [gid] + supplementaryGroups }

    /// What the kernel recorded for the peer (``KernelPeerCredentials``, as getsockopt(SO_PEERCRED) fills it),
    /// with its process's supplementary groups. Call it when the connection is accepted: the `/proc` read is a
    /// memory read of the kernel's process table.
    public init(kernel: KernelPeerCredentials) {
        self.init(
            pid: kernel.pid, uid: kernel.uid, gid: kernel.gid,
            supplementaryGroups: UnixSocket.supplementaryGroups(pid: kernel.pid, uid: kernel.uid))
    }

    /// The peer of the connected Unix-domain socket `fd` (getsockopt SO_PEERCRED), with its supplementary groups.
    public init(socket fd: Int32) throws(SystemError) {
        var raw = KernelPeerCredentials()
        var length = socklen_t(MemoryLayout<KernelPeerCredentials>.size)
        guard getsockopt(fd, KernelPeerCredentials.optionLevel, KernelPeerCredentials.optionName, &raw, &length) == 0 else {
            throw SystemError(call: "getsockopt SO_PEERCRED", errno: Glibc.errno)
        }
        self.init(kernel: raw)
    }
}

/// Linux's `struct ucred` (pid_t, uid_t, gid_t), which the Glibc module leaves out (it is declared under
/// `_GNU_SOURCE` only): the same layout, for getsockopt(SO_PEERCRED) to fill, whoever makes the call (an event
/// loop's socket option call hands it back as it is).
public struct KernelPeerCredentials: Sendable {
    public var pid: Int32 = 0
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0

    public init() {}

    /// The socket option that reads it: level `SOL_SOCKET`, name `SO_PEERCRED`.
    public static let optionLevel = Int32(SOL_SOCKET)
    public static let optionName = Int32(SO_PEERCRED)
}

/// The system calls the socket API needs besides those its server makes: finding out whether a socket file
/// is live, owning and protecting the socket file, and group lookups for peer checks.
public enum UnixSocket {
    /// What `connect(2)` to an existing socket path says.
    public enum Liveness: Sendable, Hashable {
        /// Nothing is at the path.
        case absent
        /// A socket file nobody listens on (a crashed daemon's): safe to replace.
        case stale
        /// A server accepted the connection: never take it over.
        case live
        /// Something that is not a socket is at the path: never removed.
        case notASocket
    }

    /// Whether a server listens on `path`.
    public static func liveness(of path: String) -> Liveness {
        var info = Glibc.stat()
        guard Glibc.lstat(path, &info) == 0 else { return .absent }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else { return .notASocket }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .live }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path too long for sockaddr_un cannot be connected to (nor bound): nobody can be listening on it.
        guard bytes.count < capacity else { return .stale }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result == 0 { return .live }
        // Refused: a socket file without a listener. Any other error (EACCES, EAGAIN for a full backlog) may
        // hide a live server, so it is treated as one.
        return Glibc.errno == ECONNREFUSED ? .stale : .live
    }

    /// chown(2) of the group only (the owner stays).
    public static func changeGroup(_ path: String, to gid: UInt32) throws(SystemError) {
        guard Glibc.chown(path, uid_t.max, gid) == 0 else {
            throw SystemError(call: "chown", path: path, errno: Glibc.errno)
        }
    }

    /// The id of the group named `name` (getgrnam_r), nil when there is no such group.
    public static func groupID(named name: String) -> UInt32? {
        var group = Glibc.group()
        var result: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        while true {
            let code = getgrnam_r(name, &group, &buffer, buffer.count, &result)
            if code == ERANGE, buffer.count < 1 << 20 {
                buffer = [CChar](repeating: 0, count: buffer.count * 4)
                continue
            }
            guard code == 0, result != nil else { return nil }
            return group.gr_gid
        }
    }

    /// The calling process's effective group id.
    public static var groupID: UInt32 { Glibc.getegid() }

    /// The supplementary groups of process `pid`, from the `Groups:` line of `/proc/PID/status`; empty when the
    /// file cannot be read or its real uid is not `uid` (the peer exited and its pid was reused).
    public static func supplementaryGroups(pid: Int32, uid: UInt32) -> [UInt32] {
        guard pid > 0 else { return [] }
        let path = "/proc/\(pid)/status"
        guard let fd = try? Syscall.open(path, O_RDONLY) else { return [] }
        defer { Syscall.close(fd) }
        guard let bytes = try? Syscall.readAll(fd, path: path) else { return [] }
        var groups: [UInt32] = []
        var uidMatches = false
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let key = fields.first else { continue }
            if key == "Uid:" { uidMatches = fields.dropFirst().first.flatMap { UInt32($0) } == uid }
            if key == "Groups:" { groups = fields.dropFirst().compactMap { UInt32($0) } }
        }
        return uidMatches ? groups : []
    }
}
