#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: which call, on which path, and errno. The description reads like the shell's
/// `rename .state/x.tmp: Permission denied`.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var call: String
    public var path: String?
    public var errno: Int32

    public init(call: String, path: String? = nil, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    /// errno in the system's words (strerror(3)): "Permission denied".
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String {
        if let path { return "\(call) \(path): \(reason)" }
        return "\(call): \(reason)"
    }
}
