import Platform

/// The file system questions profile lookup asks, through `Platform`.
enum ProfileFiles {
    /// Profile lists and `Local State` are small; anything larger is not one.
    static let listLimit = 4 << 20

    static func isFolder(_ path: String) -> Bool {
        (try? Syscall.stat(path).isDirectory) ?? false
    }

    static func isFile(_ path: String) -> Bool {
        (try? Syscall.stat(path).isRegularFile) ?? false
    }

    /// The text of a small file of the profile folder (invalid UTF-8 replaced: names are compared, not kept).
    static func text(_ path: String) throws(BrowserCookieError) -> String {
        do throws(BoundedReadError) {
            return String(decoding: try BoundedRead.file(path, limit: listLimit), as: UTF8.self)
        } catch {
            throw .unreadable(path: path, reason: error.reason)
        }
    }

    /// `base/name`, without doubling a slash.
    static func join(_ base: String, _ name: String) -> String {
        base.hasSuffix("/") ? base + name : base + "/" + name
    }

    /// A path the user gave, made absolute: `~/` under `home`, relative paths against `directory`.
    static func absolute(_ path: String, home: String, directory: String) -> String {
        if path == "~" { return home }
        if path.hasPrefix("~/") { return join(home, String(path.dropFirst(2))) }
        if path.hasPrefix("/") { return path }
        return join(directory, path)
    }
}
