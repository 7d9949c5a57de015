#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
// CLinux's shim includes <sys/socket.h> too, and a release build may take `SOCK_*` from its module rather than
// Glibc's: importing both finds them either way.
internal import CLinux

/// Who is at the other end of a Unix-domain socket connection, as the kernel saw it at `connect(2)`
/// (SO_PEERCRED), with the supplementary groups it had then (SO_PEERGROUPS).
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups of the peer at `connect(2)`, as the kernel recorded them (SO_PEERGROUPS, Linux
    /// 4.13+; no read of `/proc/PID/status`, which `ProtectProc=invisible` hides). Only for a peer in more
    /// groups than ``KernelPeerGroups/capacity`` (or a kernel without SO_PEERGROUPS) are they read from
    /// `/proc/PID/status` when the connection is accepted, and then empty when that cannot be read or the
    /// process behind the pid is no longer the peer's (it exited and the pid was reused: its `Uid:` differs).
    public var supplementaryGroups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, supplementaryGroups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.supplementaryGroups = supplementaryGroups
    }

    /// The primary and supplementary groups.
    public var allGroups: [UInt32] { [gid] + supplementaryGroups }

    /// What the kernel recorded for the peer (``KernelPeerCredentials`` and ``KernelPeerGroups``, as
    /// getsockopt(SO_PEERCRED) and getsockopt(SO_PEERGROUPS) fill them). Without `groups` (the peer is in more
    /// groups than the buffer holds, or the kernel has no SO_PEERGROUPS) they are read from `/proc/PID/status`:
    /// call it when the connection is accepted, when the pid is most likely still the peer's.
    public init(kernel: KernelPeerCredentials, groups: KernelPeerGroups?) {
        self.init(
            pid: kernel.pid, uid: kernel.uid, gid: kernel.gid,
            supplementaryGroups: groups?.groups ?? UnixSocket.supplementaryGroups(pid: kernel.pid, uid: kernel.uid))
    }

    /// The peer of the connected Unix-domain socket `fd` (getsockopt SO_PEERCRED), with its supplementary groups
    /// (getsockopt SO_PEERGROUPS, however many).
    public init(socket fd: Int32) throws(SystemError) {
        var raw = KernelPeerCredentials()
        var length = socklen_t(MemoryLayout<KernelPeerCredentials>.size)
        guard getsockopt(fd, KernelPeerCredentials.optionLevel, KernelPeerCredentials.optionName, &raw, &length) == 0 else {
            throw SystemError(call: "getsockopt SO_PEERCRED", errno: Glibc.errno)
        }
        self.init(pid: raw.pid, uid: raw.uid, gid: raw.gid, supplementaryGroups: try UnixSocket.peerGroups(fd))
    }
}

/// The supplementary groups SO_PEERGROUPS reports, for up to ``capacity`` of them: a fixed-size value, so that
/// an event loop's socket option call (which knows only a value's size) can fill it.
///
/// The call does not say how many it wrote; the kernel keeps a process's groups sorted (setgroups(2) sorts
/// them), so the groups are the entries up to the last nonzero one. A lone gid 0 cannot be told from none: a
/// peer whose only supplementary group is root's is judged by its primary group.
public struct KernelPeerGroups: Sendable {
    /// Groups the buffer holds: more makes the call fail with ERANGE.
    public static let capacity = 256

    public var gids = InlineArray<256, UInt32>(repeating: 0)

    public init() {}

    /// The groups, without the unused rest of the buffer.
    public var groups: [UInt32] {
        var count = Self.capacity
        while count > 0, gids[count - 1] == 0 { count -= 1 }
        return (0..<count).map { gids[$0] }
    }

    /// The socket option that reads it: level `SOL_SOCKET`, name `SO_PEERGROUPS` (59 on every Linux
    /// architecture but alpha, mips, parisc and sparc, which Swift does not run on).
    public static let optionLevel = Int32(SOL_SOCKET)
    public static let optionName: Int32 = 59
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

    /// The supplementary groups the peer of the connected Unix-domain socket `fd` had at connect(2)
    /// (getsockopt SO_PEERGROUPS, asked again with the size the kernel says it needs).
    static func peerGroups(_ fd: Int32) throws(SystemError) -> [UInt32] {
        var gids = [UInt32](repeating: 0, count: 64)
        while true {
            var length = socklen_t(gids.count * MemoryLayout<UInt32>.size)
            if getsockopt(fd, KernelPeerGroups.optionLevel, KernelPeerGroups.optionName, &gids, &length) == 0 {
                return Array(gids.prefix(Int(length) / MemoryLayout<UInt32>.size))
            }
            let code = Glibc.errno
            guard code == ERANGE, Int(length) > gids.count * MemoryLayout<UInt32>.size else {
                throw SystemError(call: "getsockopt SO_PEERGROUPS", errno: code)
            }
            gids = [UInt32](repeating: 0, count: Int(length) / MemoryLayout<UInt32>.size)
        }
    }

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
