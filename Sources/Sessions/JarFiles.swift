import CookieJar
import Foundation
import Platform

/// Reading and writing jar files, as the `jar` subcommands, `import` and `login --jar` do (SPEC section 9).
///
/// Reading: `-` is standard input; a file's format comes from its content (json, Playwright, Set-Cookie
/// lines, cookies.txt), its name deciding only for an empty file; reads stop at ``readLimit``; bytes that
/// are not UTF-8 are refused, never rewritten.
///
/// Writing never clobbers: `-` is standard output; symbolic links are followed to the file they name;
/// anything but a regular file is refused; an existing file that is not a jar is refused; the file is
/// locked while it is read, changed and replaced, so concurrent writers lose nothing. A jar keeps the
/// format it has; a new one is json when named `*.json`, Netscape cookies.txt otherwise.
public enum JarFiles {
    /// The most a jar file or standard input may hold: 3000 cookies of 4 KiB each, in json, fit about
    /// four times over; /dev/zero or an endless FIFO stops here.
    public static let readLimit = 64 << 20

    /// The format a new jar file is written in, from its name.
    public static func format(forPath path: String) -> CookieFormat {
        path.lowercased().hasSuffix(".json") ? .json : .netscape
    }

    // MARK: Reading

    /// The name a path has in messages.
    public static func displayName(_ path: String) -> String { path == "-" ? "standard input" : path }

    /// The bytes of a file a user named, or of standard input for `-`; nil when the file is missing and
    /// `missingIsNil`. Unreadable input is bad input, in the user's words.
    public static func readBytes(_ path: String, missingIsNil: Bool = false) throws(JarFileError) -> [UInt8]? {
        do throws(SystemError) {
            if path == "-" { return try DurableFile.read(descriptor: STDIN_FILENO, path: "standard input", limit: readLimit) }
            return try DurableFile.read(path, limit: readLimit)
        } catch {
            if missingIsNil && error.errno == ENOENT { return nil }
            throw .badInput("cannot read \(displayName(path)): \(reason(error.errno))")
        }
    }

    /// `bytes` as text, or a usage error naming the first line that is not UTF-8.
    public static func text(of bytes: [UInt8], name: String) throws(JarFileError) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var line = 1
        for piece in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            if String(validating: piece, as: UTF8.self) == nil { break }
            line += 1
        }
        throw .badInput(
            "\(name) line \(line): bytes that are not UTF-8; cookie names and values are kept as UTF-8 text and never "
                + "rewritten, so the file is refused (convert it to UTF-8 first)")
    }

    /// The text of a file or of standard input (`-`), nil when missing and `missingIsEmpty`.
    public static func readText(_ path: String, missingIsEmpty: Bool) throws(JarFileError) -> String? {
        guard let bytes = try readBytes(path, missingIsNil: missingIsEmpty) else { return nil }
        return try text(of: bytes, name: displayName(path))
    }

    /// The format a cookie file's content is in: by content, the name deciding for an empty file.
    public static func formatOfContent(_ text: String, path: String) -> CookieFormat {
        switch CookieFormat.guess(from: text) {
        case .json?: .json
        case .playwright?: .playwright
        case .setCookie?: .setCookie
        case .netscape?: .netscape
        case .header?, nil: format(forPath: path)
        }
    }

    /// Decodes a cookie file's text, refusing cookies no Set-Cookie header could have made (a line break in a
    /// value, say), so that whatever is read can be written back in any format.
    public static func decode(
        _ text: String, as format: CookieFormat, path: String, url: URL? = nil, now: Date
    ) throws(JarFileError) -> [Cookie] {
        if text.allSatisfy(\.isWhitespace) { return [] }
        let cookies: [Cookie]
        do {
            cookies = try CookieCodec.decode(text, as: format, url: url, now: now)
        } catch {
            throw .badInput("\(displayName(path)): \(error)")
        }
        for (index, cookie) in cookies.enumerated() {
            if let problem = cookie.fileProblem {
                throw .badInput("\(displayName(path)): cookie \(index + 1): \(problem); the file is refused")
            }
        }
        return cookies
    }

    /// Loads a jar file's (or standard input's) cookies for reading.
    public static func load(_ path: String, now: Date) throws(JarFileError) -> [Cookie] {
        guard let text = try readText(path, missingIsEmpty: false) else { return [] }
        return try decode(text, as: formatOfContent(text, path: path), path: path, now: now)
    }

    /// A storage holding the file's cookies as they are (restored: no limit trims a user's file), with the
    /// clock at `now`.
    public static func storage(loading path: String, now: Date) throws(JarFileError) -> CookieStorage {
        let storage = CookieStorage(acceptPolicy: .always, limits: CookieLimits(), clock: { now })
        storage.restore(try load(path, now: now))
        return storage
    }

    // MARK: Writing

    /// The formats a file may hold to be a jar that a command writes back.
    private static let jarFormats: Set<CookieFormat> = [.netscape, .json, .playwright]

    /// A writable jar's existing content: its cookies and the format to write it back in; a usage error when
    /// the content is not a jar (a site file, a script), which is never overwritten.
    private static func existingJar(_ bytes: [UInt8], path: String, now: Date) throws(JarFileError) -> (cookies: [Cookie], format: CookieFormat) {
        let content = try text(of: bytes, name: path)
        if content.allSatisfy(\.isWhitespace) { return ([], format(forPath: path)) }
        guard let guessed = CookieFormat.guess(from: content), jarFormats.contains(guessed) else {
            throw .badInput(
                "\(path) is not a cookie jar (not Netscape cookies.txt, json or Playwright), so it is not overwritten; "
                    + "give the path of a jar file or of a new file")
        }
        do throws(JarFileError) {
            return (try decode(content, as: guessed, path: path, now: now), guessed)
        } catch {
            throw .badInput("\(error.message); it is not overwritten")
        }
    }

    /// Checks, before any work is done, that `path` can be written as a jar: `-`, a new file in a writable
    /// folder, or an existing jar (any other file is refused). Nothing is created or locked.
    public static func checkWritable(_ path: String, now: Date) throws(JarFileError) {
        guard path != "-" else { return }
        let target: ReplaceTarget
        do throws(FileReplaceError) {
            target = try DurableFile.replaceTarget(path)
        } catch {
            throw failure(error, path: path)
        }
        guard target.exists, let bytes = try readBytes(target.target, missingIsNil: true) else { return }
        _ = try existingJar(bytes, path: path, now: now)
    }

    /// What ``update(_:now:standardOutput:_:)`` wrote.
    public struct Written: Sendable, Hashable {
        public var count: Int
        public var format: CookieFormat
    }

    /// Reads the jar at `path` under its lock, hands its cookies to `change`, and replaces the file with the
    /// cookies `change` returns, in the jar's own format (a new file's from its name), mode 0600. `-` starts
    /// from no cookies and hands Netscape cookies.txt to `standardOutput`. Throws ``JarFileError`` or what
    /// `change` throws.
    @discardableResult
    public static func update(
        _ path: String, now: Date, standardOutput: (String) -> Void, _ change: ([Cookie]) throws -> [Cookie]
    ) throws -> Written {
        if path == "-" {
            let cookies = try change([])
            standardOutput(CookieCodec.encode(cookies, as: .netscape))
            return Written(count: cookies.count, format: .netscape)
        }
        let locked = try lockForReplace(path)
        defer { locked.release() }
        let existing = try existingJar(locked.contents, path: path, now: now)
        let cookies = try change(existing.cookies)
        do throws(SystemError) {
            try locked.replace(with: Array(CookieCodec.encode(cookies, as: existing.format).utf8))
        } catch {
            throw failure(.system(error), path: path)
        }
        return Written(count: cookies.count, format: existing.format)
    }

    /// `path` locked for a read-modify-write (symbolic links followed, only a regular file replaced), with
    /// its current content read up to the jar size limit; a failure in the user's words.
    private static func lockForReplace(_ path: String) throws(JarFileError) -> LockedFile {
        do throws(FileReplaceError) {
            return try DurableFile.lockForReplace(path, readLimit: readLimit)
        } catch {
            throw failure(error, path: path)
        }
    }

    /// Writes `cookies` to `path` as the whole new content (`jar convert`'s output), under the file's lock;
    /// an existing file is replaced only when it is empty or a cookie file (a jar or Set-Cookie lines).
    public static func replace(_ path: String, with cookies: [Cookie], format: CookieFormat, now: Date) throws(JarFileError) {
        let locked = try lockForReplace(path)
        defer { locked.release() }
        let content = try text(of: locked.contents, name: path)
        if !content.allSatisfy(\.isWhitespace), CookieFormat.guess(from: content) != .setCookie {
            _ = try existingJar(locked.contents, path: path, now: now)
        }
        do throws(SystemError) {
            try locked.replace(with: Array(CookieCodec.encode(cookies, as: format).utf8))
        } catch {
            throw failure(.system(error), path: path)
        }
    }

    // MARK: Messages

    /// A refused or failed write, in the user's words: what happened to which file and what to do. A path
    /// that cannot be a jar is bad input; a write the system refused failed.
    static func failure(_ error: FileReplaceError, path: String) -> JarFileError {
        switch error {
        case let .notRegularFile(_, target, kind):
            let which = target == path ? path : "\(path) (which leads to \(target))"
            return .badInput(
                "\(which) is \(kind), not a regular file; jar files are replaced as a whole, so only regular files are "
                    + "written: give the path of a file, or - for standard output")
        case .untrustedSymbolicLink:
            return .badInput(error.description)
        case .symbolicLinkLoop:
            return .badInput("\(path): its symbolic links loop (more than \(DurableFile.maxSymbolicLinkHops) hops); fix or remove the link")
        case .system(let system):
            // Syscall.stat is used on the folder only: the file itself is looked at with lstat.
            if system.call == "stat" {
                return .badInput("cannot write \(path): the folder \(system.path ?? path) does not exist or is not a folder")
            }
            switch system.errno {
            case EACCES, EPERM:
                var isFolder: ObjCBool = false
                let onFolder = system.path.map { FileManager.default.fileExists(atPath: $0, isDirectory: &isFolder) && isFolder.boolValue } ?? false
                return .failed(
                    "cannot write \(path): permission denied"
                        + (onFolder ? " on the folder \(system.path ?? path) (the jar is replaced as a whole, so its folder must be writable)" : ""))
            case ENOENT, ENOTDIR, ENAMETOOLONG:
                return .badInput("cannot write \(path): \(reason(system.errno))")
            default:
                return .failed("cannot write \(path): \(reason(system.errno))")
            }
        }
    }

    /// errno in words, without the system call or a temporary file's name.
    static func reason(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such file or folder"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "it is a directory"
        case EFBIG: "it holds more than \(readLimit >> 20) MiB, more than any jar"
        case ENOSPC: "no space left on the device"
        case EDQUOT: "the disk quota is exceeded"
        case EROFS: "the file system is read-only"
        case ELOOP: "its symbolic links loop"
        case ENAMETOOLONG: "the name is too long"
        case ENOTDIR: "a part of the path is not a folder"
        default: SystemError(call: "", errno: code).reason
        }
    }
}

/// Why a jar file could not be read or written, in the user's words (the file and what to do; never a cookie
/// value).
public struct JarFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The input is at fault: a path that cannot be a jar, bytes that are not UTF-8, a file that is not one of
        /// the cookie formats.
        case badInput
        /// The system refused: permission, a full disk.
        case failed
    }

    public var kind: Kind
    public var message: String

    public static func badInput(_ message: String) -> JarFileError { JarFileError(kind: .badInput, message: message) }
    public static func failed(_ message: String) -> JarFileError { JarFileError(kind: .failed, message: message) }

    public var description: String { message }
}
