#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CLinux

/// Lets an idle process give back the memory its code occupies.
///
/// A long-lived daemon runs its login code (libcurl, OpenSSL, the flow engine) for a second every few minutes,
/// yet every page of code it ever ran stays mapped, and counted in its resident memory, for good. Between runs
/// those pages are only a copy of the files they came from: dropping the process's mappings of them loses
/// nothing. They stay in the page cache, where the kernel reclaims them first when memory is short, and the next
/// run maps the ones it needs again (a minor fault each, without reading the disk while they are cached).
///
/// Only pages that are exact copies of a program or library file are dropped: mappings of a file that is mapped
/// executable (the program and the libraries it loaded, never a data file, which another process could truncate
/// under us), that are read-only and private, and that hold no private copy of any page (`Anonymous: 0 kB` in
/// `/proc/self/smaps`). Writable mappings, and read-only ones written before they were sealed (the relocated
/// RELRO data), keep every page. Heap memory is returned with `malloc_trim(3)`.
public enum ResidentCode {
    /// What one ``release()`` gave back.
    public struct Release: Sendable, Equatable {
        /// Mappings whose pages were dropped.
        public var mappings: Int
        /// Resident bytes those mappings held before (from `/proc/self/smaps`).
        public var bytes: Int
        /// Mappings the kernel refused to drop (left as they were).
        public var refused: Int
    }

    /// One mapping of `/proc/self/smaps`, with what ``releasable(_:)`` needs.
    public struct Mapping: Sendable, Equatable {
        public var start: UInt
        public var end: UInt
        /// The four permission letters: `r-xp`.
        public var permissions: String
        /// The mapped file's path; empty for anonymous memory, `[heap]` and the like for the kernel's own.
        public var path: String
        /// Resident and private-copy (COW) sizes, in bytes.
        public var resident: Int
        public var anonymous: Int
        /// The `VmFlags:` two-letter flags.
        public var flags: [String]

        var isExecutable: Bool { permissions.dropFirst(2).first == "x" }
        var isReadOnlyPrivate: Bool {
            let letters = Array(permissions)
            return letters.count == 4 && letters[0] == "r" && letters[1] == "-" && letters[3] == "p"
        }
    }

    /// Flags of mappings that are never touched: locked pages (`lo`), device and raw PFN memory (`io`, `pf`),
    /// huge-TLB pages (`ht`).
    static let untouchableFlags: Set<String> = ["lo", "io", "pf", "ht"]

    /// Drops this process's resident copies of its program's and libraries' code and read-only data, and trims the
    /// heap. Safe from any thread while others run: a page another thread needs meanwhile is mapped again on its
    /// next access. Not while a library is being loaded, whose loader could write to a mapping between the look at
    /// smaps and the drop (a text relocation), nor unloaded, which could leave the range to a new mapping before
    /// the drop: the daemon calls it only with no run in flight, only runs load libraries (libcurl, libxml2), and
    /// nothing unloads one.
    public static func release() throws(SystemError) -> Release {
        let path = "/proc/self/smaps"
        let fd = try Syscall.open(path, O_RDONLY)
        defer { Syscall.close(fd) }
        let text = try Syscall.readAll(fd, path: path)
        var result = Release(mappings: 0, bytes: 0, refused: 0)
        for mapping in releasable(parse(smaps: text)) {
            let pointer = UnsafeMutableRawPointer(bitPattern: mapping.start)
            if clinux_madvise_dontneed(pointer, Int(mapping.end - mapping.start)) == 0 {
                result.mappings += 1
                result.bytes += mapping.resident
            } else {
                result.refused += 1
            }
        }
        _ = clinux_malloc_trim()
        return result
    }

    /// The mappings ``release()`` drops: read-only private mappings of a file the process maps executable, with
    /// resident pages and no private copy of any.
    public static func releasable(_ mappings: [Mapping]) -> [Mapping] {
        let images = Set(mappings.filter { $0.isExecutable && $0.path.hasPrefix("/") }.map(\.path))
        return mappings.filter { mapping in
            images.contains(mapping.path) && mapping.isReadOnlyPrivate && mapping.resident > 0
                && mapping.anonymous == 0 && untouchableFlags.isDisjoint(with: mapping.flags)
        }
    }

    /// Reads the text of `/proc/PID/smaps`. A mapping whose `Anonymous:` line is missing counts as holding private
    /// copies, so it is never dropped.
    public static func parse(smaps bytes: [UInt8]) -> [Mapping] {
        var mappings: [Mapping] = []
        var current: Mapping?
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let text = String(decoding: line, as: UTF8.self)
            if let header = header(text) {
                if let current { mappings.append(current) }
                current = header
                continue
            }
            guard current != nil else { continue }
            let fields = text.split(separator: " ", omittingEmptySubsequences: true)
            guard let key = fields.first else { continue }
            switch key {
            case "Rss:": current?.resident = kilobytes(fields) ?? 0
            case "Anonymous:": current?.anonymous = kilobytes(fields) ?? Int.max
            case "VmFlags:": current?.flags = fields.dropFirst().map(String.init)
            default: break
            }
        }
        if let current { mappings.append(current) }
        return mappings
    }

    /// `start-end perms offset dev inode [path]`; nil for a `Key: value` line.
    private static func header(_ line: String) -> Mapping? {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, !fields[0].hasSuffix(":"), fields[1].count == 4 else { return nil }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16), start < end
        else { return nil }
        let path = fields.count == 6 ? String(fields[5].drop(while: { $0 == " " })) : ""
        // Until its Anonymous: line says otherwise, a mapping counts as holding private copies.
        return Mapping(
            start: start, end: end, permissions: String(fields[1]), path: path, resident: 0, anonymous: Int.max,
            flags: [])
    }

    /// `Key:   123 kB` in bytes.
    private static func kilobytes(_ fields: [Substring]) -> Int? {
        guard fields.count >= 3, fields[2] == "kB", let value = Int(fields[1]) else { return nil }
        return value * 1024
    }
}
