import Platform

/// Which process a client believes when it answers at the socket path (SPEC section 9): the path comes from a
/// config file, and what listens there could be any user's program that took the path (a daemon that is not
/// running leaves it free), which would then read every request (a `set-cookie`'s cookies, a proxied request's
/// body) and answer what it likes. So the server's uid, as the kernel recorded it at `listen(2)`
/// (SO_PEERCRED on the connected socket), must be root, the caller's own, or the daemon's user: the configured
/// daemon user (the owner of config.yaml's `state_dir`, which the daemon keeps as its own) when that user also
/// owns the socket file.
public struct ServerTrust: Sendable, Hashable {
    /// The daemon's user as the configuration says (the owner of its `state_dir`); nil when no configuration
    /// names one (a `--socket` without config.yaml), and then only root and the caller are believed.
    public var daemonUID: UInt32?
    /// The caller's uid.
    public var callerUID: UInt32

    public init(daemonUID: UInt32? = nil, callerUID: UInt32 = Syscall.userID) {
        self.daemonUID = daemonUID
        self.callerUID = callerUID
    }

    /// Why the server at `socket`, running as `serverUID`, is not believed; nil when it is.
    /// - Parameter socketOwner: the socket file's owner (nil when it could not be read).
    public func refusal(serverUID: UInt32, socketOwner: UInt32?, socket: String) -> String? {
        if serverUID == 0 || serverUID == callerUID { return nil }
        if let daemonUID, serverUID == daemonUID, socketOwner == daemonUID { return nil }
        var believed = ["root", "you (uid \(callerUID))"]
        if let daemonUID {
            believed.append("the daemon's user (uid \(daemonUID), the owner of state_dir\(socketOwner == daemonUID ? "" : ", who does not own the socket file"))")
        }
        return "the server on \(socket) runs as uid \(serverUID), which is neither \(believed.dropLast().joined(separator: ", ")) nor \(believed.last ?? "")"
            + "; refusing to talk to it (another user's program may hold the socket path)"
    }
}
