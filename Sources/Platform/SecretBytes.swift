#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CLinux

/// A few bytes of key material kept apart from the rest of the process's memory: in pages of their own,
/// left out of core files (`MADV_DONTDUMP`), locked in memory when the limit allows (never swapped out),
/// read-only once written (a stray write faults instead of changing a key), and zeroed before they are
/// unmapped.
///
/// The vault keeps its master keys, the keys derived from them and its key-encryption key here
/// (docs/ARCHITECTURE.md, "Where key bytes live"). Each instance maps whole pages: meant for the handful of
/// keys a process holds, not for bulk data.
public final class SecretBytes: @unchecked Sendable {
    // @unchecked: the pages are written only in `init` and read-only (mprotect) until `deinit`.
    /// How many bytes it holds.
    public let count: Int
    /// Whether the pages are locked in memory (mlock(2) may be refused by RLIMIT_MEMLOCK: then they can be swapped).
    public let isLocked: Bool
    private let start: UnsafeMutableRawPointer
    private let length: Int

    /// Maps pages for `count` bytes and lets `initialize` write them (it gets exactly `count` bytes).
    public init(count: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) -> Void) throws(SystemError) {
        let page = max(Int(Glibc.sysconf(Int32(_SC_PAGESIZE))), 4096)
        let length = max(page, (count + page - 1) / page * page)
        guard let start = clinux_map_anonymous(length) else { throw SystemError(call: "mmap", errno: Glibc.errno) }
        guard clinux_madvise_dontdump(start, length) == 0 else {
            let code = Glibc.errno
            _ = clinux_unmap(start, length)
            throw SystemError(call: "madvise(MADV_DONTDUMP)", errno: code)
        }
        isLocked = clinux_lock(start, length) == 0
        initialize(UnsafeMutableRawBufferPointer(start: start, count: count))
        guard clinux_protect(start, length, 0) == 0 else {
            let code = Glibc.errno
            _ = Glibc.memset(start, 0, length)
            _ = clinux_unmap(start, length)
            throw SystemError(call: "mprotect", errno: code)
        }
        self.count = count
        self.start = start
        self.length = length
    }

    /// A copy of `bytes`.
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try self.init(count: bytes.count) { target in
            if let source = bytes.baseAddress, bytes.count > 0 { target.baseAddress?.copyMemory(from: source, byteCount: bytes.count) }
        }
    }

    /// Calls `body` with the bytes; the pointer is valid only during the call.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: start, count: count))
    }

    /// The address of the first byte, for tests that look the pages up in `/proc/self/smaps`.
    public var address: UInt { UInt(bitPattern: start) }

    deinit {
        // Writable again only to be zeroed; should mprotect fail, the pages are unmapped as they are.
        if clinux_protect(start, length, 1) == 0 { _ = Glibc.memset(start, 0, length) }
        _ = clinux_unmap(start, length)
    }
}
