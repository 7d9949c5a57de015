#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Locking

/// Names of entries in one folder that changed (created, written and closed, moved in or out, deleted,
/// attributes changed), through inotify(7). A dedicated thread blocks in read(2) on the inotify
/// descriptor, so there is no polling loop and no timer: it wakes only when the kernel has something to
/// say. ``stop()`` removes the watch, and the kernel's IN_IGNORED event wakes the thread to leave.
///
/// ``changes`` yields batches of file names (not paths), in the order the kernel reported them. It
/// finishes when the watcher stops or the folder itself is deleted or moved away.
public final class DirectoryWatcher: Sendable {
    /// The folder being watched.
    public let folder: String
    /// Batches of changed names.
    public let changes: AsyncStream<[String]>

    /// The inotify descriptor and its watch, nil once the thread closed it (so a later ``stop()`` can
    /// never touch a descriptor number the process has since reused).
    private let handle: WatchHandle

    /// Shared by the watcher and its thread.
    private final class WatchHandle: Sendable {
        let current: Locked<(fd: Int32, watch: Int32)?>
        init(fd: Int32, watch: Int32) { current = Locked((fd, watch)) }
    }

    /// Starts watching `folder`.
    public init(folder: String) throws(SystemError) {
        self.folder = folder
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { throw SystemError(call: "inotify_init1", path: folder, errno: errno) }
        let mask = UInt32(IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF
            | IN_MOVE_SELF | IN_ATTRIB | IN_ONLYDIR)
        let watch = inotify_add_watch(fd, folder, mask)
        guard watch >= 0 else {
            let code = errno
            Glibc.close(fd)
            throw SystemError(call: "inotify_add_watch", path: folder, errno: code)
        }
        let handle = WatchHandle(fd: fd, watch: watch)
        self.handle = handle
        let (stream, continuation) = AsyncStream.makeStream(of: [String].self, bufferingPolicy: .unbounded)
        changes = stream
        let thread = Thread { Self.run(fd: fd, handle: handle, continuation: continuation) }
        thread.name = "sk-watch"
        thread.start()
    }

    /// Stops watching and finishes ``changes``. Idempotent.
    public func stop() {
        handle.current.withLock { current in
            guard let current else { return }
            _ = inotify_rm_watch(current.fd, current.watch)
        }
    }

    deinit { stop() }

    private static func run(
        fd: Int32, handle: WatchHandle, continuation: AsyncStream<[String]>.Continuation
    ) {
        defer {
            handle.current.withLock { current in
                current = nil
                Glibc.close(fd)
            }
            continuation.finish()
        }
        // Room for many events at once; each is a header plus a name of at most NAME_MAX bytes.
        let capacity = 64 * (MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer, capacity)
            if count < 0 {
                if errno == EINTR { continue }
                return
            }
            var names: [String] = []
            var gone = false
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                if event.len > 0 {
                    let bytes = UnsafeRawBufferPointer(start: buffer + nameStart, count: Int(event.len))
                    let name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    if !name.isEmpty { names.append(name) }
                }
                if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 { gone = true }
                offset = nameStart + Int(event.len)
            }
            if !names.isEmpty { continuation.yield(names) }
            if gone { return }
        }
    }
}
