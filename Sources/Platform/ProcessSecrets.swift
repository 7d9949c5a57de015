#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CLinux

/// Keeps what a process holds (the vault's keys, cookies, credentials) from other processes of the same user
/// and from core files (docs/SECURITY.md, "Secrets stay in the process").
///
/// Commands that open the vault call ``forbidDumpsAndTracing()`` first and take the passphrase variable out of
/// the environment with ``takeFromEnvironment(_:)`` before they use it.
public enum ProcessSecrets {
    /// Makes the process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): a crash writes no core file, the files of
    /// `/proc/PID` that show its memory and environment (`environ`, `mem`, `maps`) belong to root so processes of
    /// the same uid cannot read them, and they cannot ptrace it either (without CAP_SYS_PTRACE). The flag is reset
    /// by execve(2), so the plugins and commands the process starts are dumpable as usual: they hold none of its
    /// memory.
    public static func forbidDumpsAndTracing() throws(SystemError) {
        guard clinux_set_dumpable(0) == 0 else { throw SystemError(call: "prctl(PR_SET_DUMPABLE)", errno: Glibc.errno) }
    }

    /// Whether the process may be dumped and traced by its own uid (`PR_GET_DUMPABLE` is 1).
    public static var isDumpable: Bool {
        clinux_get_dumpable() == 1
    }

    /// Removes the variable `name` from the process's environment and returns its value (nil when unset).
    ///
    /// `unsetenv(3)` alone only drops the pointer from `environ`: the text `NAME=value` stays in the block the
    /// kernel laid out at execve(2), which `/proc/PID/environ` shows for the whole life of the process. So every
    /// `NAME=...` entry is overwritten with zero bytes in place, after `unsetenv` has taken it out of `environ`.
    /// Call it before any thread that reads the environment starts: the C library's environment is not locked
    /// against concurrent readers.
    public static func takeFromEnvironment(_ name: String) -> String? {
        let prefix = Array(name.utf8) + [UInt8(ascii: "=")]
        var entries: [UnsafeMutablePointer<CChar>] = []
        var value: String?
        var cursor = Glibc.environ
        while let entry = cursor.pointee {
            if hasPrefix(entry, prefix) {
                entries.append(entry)
                if value == nil { value = String(cString: entry + prefix.count) }
            }
            cursor += 1
        }
        _ = Glibc.unsetenv(name)
        for entry in entries {
            let length = Glibc.strlen(entry)
            // memset_explicit would say "never elided" too; a store to memory other code may read is never elided.
            _ = Glibc.memset(entry, 0, length)
        }
        return value
    }

    private static func hasPrefix(_ entry: UnsafeMutablePointer<CChar>, _ prefix: [UInt8]) -> Bool {
        for (index, byte) in prefix.enumerated() where UInt8(bitPattern: entry[index]) != byte {
            // A NUL in the entry differs from every byte of the prefix, so the scan never reads past its end.
            return false
        }
        return true
    }
}
