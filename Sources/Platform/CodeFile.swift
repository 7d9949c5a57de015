#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a file that is code to the daemon, or one of its folders, was refused.
public struct UntrustedCodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with ``path``.
    public enum Problem: Sendable, Hashable {
        /// Group or others may write it (`mode` holds the permission bits).
        case writableByOthers(mode: mode_t)
        /// A user other than this process's and root owns it.
        case foreignOwner(uid: uid_t)
        /// It could not be examined.
        case system(SystemError)

        /// True for ``system(_:)``: nothing was found wrong, the file or folder could not be looked at.
        public var isSystemError: Bool {
            if case .system = self { return true }
            return false
        }
    }

    /// The file or folder at fault (the checked file itself, or one of its folders).
    public var path: String
    /// Whether ``path`` is a folder.
    public var isFolder: Bool
    public var problem: Problem

    public var description: String {
        let what = isFolder ? "its folder \(path)" : path
        switch problem {
        case let .writableByOthers(mode):
            let who = mode & 0o020 != 0 ? (mode & 0o002 != 0 ? "group and others" : "its group") : "others"
            let bits = mode & 0o020 != 0 ? (mode & 0o002 != 0 ? "go" : "g") : "o"
            return "\(what) is writable by \(who) (mode 0\(String(mode & 0o7777, radix: 8))), so they could change what the "
                + "daemon runs; run `chmod \(bits)-w \(path)`"
        case let .foreignOwner(uid):
            return "\(what) belongs to uid \(uid), neither this user (uid \(Syscall.userID)) nor root, who could change what "
                + "the daemon runs; run `chown \(Syscall.userID) \(path)` or move it away"
        case let .system(error):
            return "\(what) cannot be examined: \(error)"
        }
    }
}

/// Files that are code to the daemon (SPEC section 3, "Site files and plugins are code"): a site file can
/// run commands and read secrets, a plugin is run, so they and the folders holding them are trusted as the
/// daemon's own program is. As ssh refuses a private key or an `authorized_keys` that others could change,
/// ``check(_:)`` refuses one that a user other than this process's and root could change.
public enum CodeFile {
    /// Checks `path` (absolute) and every folder above it, following symbolic links (the folders of the path
    /// as written, which hold the links, and those of the file they lead to):
    ///
    /// - each must belong to this process's uid or to root;
    /// - the file and the folder that holds it must not be writable by group or others;
    /// - a folder higher up may be, when its sticky bit is set (`/tmp`): there only an entry's owner may
    ///   rename or remove it, and the entry below it is checked in turn.
    ///
    /// Something that is not a regular file (a device, a FIFO) is left to the reader, which refuses it in its own
    /// words.
    public static func check(_ path: String) throws(UntrustedCodeError) {
        guard try checkEntry(path, isFolder: false, sticky: false).isRegularFile else { return }
        var checked = Set<String>()
        var chains = [folders(above: path)]
        if let real = Syscall.realPath(path), real != path {
            try checkEntry(real, isFolder: false, sticky: false)
            chains.append(folders(above: real))
        }
        for chain in chains {
            for (index, folder) in chain.enumerated() where checked.insert(folder).inserted {
                try checkEntry(folder, isFolder: true, sticky: index > 0)
            }
        }
    }

    /// The folders above `path`, nearest first, `/` last.
    static func folders(above path: String) -> [String] {
        var result: [String] = []
        var current = path
        while let slash = current.lastIndex(of: "/") {
            current = slash == current.startIndex ? "/" : String(current[..<slash])
            result.append(current)
            if current == "/" { break }
        }
        return result
    }

    @discardableResult
    private static func checkEntry(_ path: String, isFolder: Bool, sticky allowsSticky: Bool) throws(UntrustedCodeError) -> FileStatus {
        let status: FileStatus
        do throws(SystemError) { status = try Syscall.stat(path) } catch {
            throw UntrustedCodeError(path: path, isFolder: isFolder, problem: .system(error))
        }
        if !isFolder && !status.isRegularFile { return status }
        if status.ownerUID != Syscall.userID && status.ownerUID != 0 {
            throw UntrustedCodeError(path: path, isFolder: isFolder, problem: .foreignOwner(uid: status.ownerUID))
        }
        let writable = status.mode & 0o022 != 0
        let sticky = status.mode & 0o1000 != 0
        if writable && !(allowsSticky && status.isDirectory && sticky) {
            throw UntrustedCodeError(path: path, isFolder: isFolder, problem: .writableByOthers(mode: status.mode))
        }
        return status
    }
}
