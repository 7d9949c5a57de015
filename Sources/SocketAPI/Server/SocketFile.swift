import Foundation
import Platform
import SiteConfig

/// Why the socket file cannot be set up. Names the path and what is wrong.
public enum SocketFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another process listens on the path: a second daemon never takes a live socket over.
    case inUse(path: String)
    /// Something that is not a socket is at the path: it is never removed.
    case notASocket(path: String)
    /// `socket.group` names no group.
    case unknownGroup(String)
    /// A system call failed.
    case system(SystemError)

    public var description: String {
        switch self {
        case .inUse(let path):
            "\(path): another process is listening on this socket (is another sessionkeeper running?); stop it or set socket.path"
        case .notASocket(let path): "\(path) exists and is not a socket; it is left alone: remove it or set socket.path"
        case .unknownGroup(let name): "socket.group: no group named '\(name)'"
        case .system(let error): "socket: \(error)"
        }
    }
}

/// The socket file's life around the server (SPEC section 8, issue 12): its folder, a stale file left by a crash,
/// its mode and group once bound, and its removal on shutdown.
enum SocketFile {
    /// Before binding: creates a missing folder (0700, or 0750 owned by `socket.group` when one is set; an
    /// existing folder is left as it is, it may be `$XDG_RUNTIME_DIR`), replaces a stale socket file (nobody
    /// answers a connect) and refuses a live one or anything that is not a socket.
    /// - Returns: the group's id when `socket.group` is set.
    static func prepare(_ settings: SocketSettings) throws(SocketFileError) -> UInt32? {
        var gid: UInt32?
        if let name = settings.group {
            guard let found = UnixSocket.groupID(named: name) else { throw .unknownGroup(name) }
            gid = found
        }
        let folder = (settings.path as NSString).deletingLastPathComponent
        do throws(SystemError) {
            if !folder.isEmpty, !Syscall.exists(folder) {
                try DurableFile.makePrivateFolder(folder)
                if let gid {
                    try UnixSocket.changeGroup(folder, to: gid)
                    try Syscall.chmod(folder, 0o750)
                }
            }
        } catch {
            throw .system(error)
        }
        switch UnixSocket.liveness(of: settings.path) {
        case .absent: break
        case .stale:
            do throws(SystemError) {
                try Syscall.unlinkIfPresent(settings.path)
            } catch {
                throw .system(error)
            }
        case .live: throw .inUse(path: settings.path)
        case .notASocket: throw .notASocket(path: settings.path)
        }
        return gid
    }

    /// Once bound: the configured mode and group. The folder kept everyone else out until now.
    static func protect(_ settings: SocketSettings, gid: UInt32?) throws(SocketFileError) {
        do throws(SystemError) {
            if let gid { try UnixSocket.changeGroup(settings.path, to: gid) }
            try Syscall.chmod(settings.path, mode_t(settings.mode))
        } catch {
            throw .system(error)
        }
    }

    /// On shutdown: removes the socket file (a missing one is not an error).
    static func remove(_ path: String) {
        _ = try? Syscall.unlinkIfPresent(path)
    }
}
