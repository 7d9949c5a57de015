#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reading secrets from standard input: with echo off when it is a terminal.
public enum Terminal {
    /// True when `fd` is a terminal.
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The width of the terminal `fd` is, in columns (TIOCGWINSZ); nil when it is not a terminal or says 0.
    public static func columns(_ fd: Int32) -> Int? {
        var size = winsize()
        guard isatty(fd) == 1, ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// Reads a secret from `fd`. On a terminal: writes `prompt` to standard error, turns echo off
    /// (termios), reads one line and restores the terminal's settings. Otherwise: reads everything
    /// (at most `limit` bytes) and drops one trailing newline, so `printf 'x' |` and `echo x |` agree.
    public static func readSecret(prompt: String, from fd: Int32 = 0, limit: Int = 1 << 20) throws(SystemError) -> [UInt8] {
        if !isTerminal(fd) {
            var bytes = try Syscall.readAll(fd, path: "standard input")
            if bytes.count > limit { bytes.removeLast(bytes.count - limit) }
            return trimmingOneNewline(bytes)
        }
        var saved = termios()
        try Syscall.retryingOnInterrupt("tcgetattr", path: "terminal") { tcgetattr(fd, &saved) }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        // A signal that ends the process while echo is off (Ctrl-C at the prompt) must not leave the
        // user's terminal silent: the handlers restore the settings, then die of the same signal.
        EchoRestorer.fd = fd
        EchoRestorer.settings.pointee = saved
        let previous = EchoRestorer.fatalSignals.map { ($0, signal($0, restoreTerminalAndDie)) }
        defer {
            for (number, handler) in previous { signal(number, handler) }
        }
        // Echo goes off before the prompt appears, so nothing typed after the prompt is ever echoed.
        try Syscall.retryingOnInterrupt("tcsetattr", path: "terminal") { tcsetattr(fd, TCSAFLUSH, &quiet) }
        defer { _ = tcsetattr(fd, TCSAFLUSH, &saved) }
        let promptBytes = Array(prompt.utf8)
        _ = promptBytes.withUnsafeBytes { buffer in Glibc.write(2, buffer.baseAddress, buffer.count) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < limit {
            let count = try Syscall.retryingOnInterrupt("read", path: "terminal") { Glibc.read(fd, &byte, 1) }
            if count == 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        return trimmingOneNewline(line)
    }

    static func trimmingOneNewline(_ bytes: [UInt8]) -> [UInt8] {
        var result = bytes
        if result.last == UInt8(ascii: "\n") { result.removeLast() }
        if result.last == UInt8(ascii: "\r") { result.removeLast() }
        return result
    }
}

/// What the signal handler restores. Written before the handlers are installed, only read by them;
/// one prompt at a time per process (a CLI reading its standard input).
enum EchoRestorer {
    nonisolated(unsafe) static var fd: Int32 = 0
    /// On the heap, not a global `termios`: Swift 6.3 emits a global of an imported C struct with internal
    /// padding at the size of its fields without the padding (57 bytes for glibc's 60-byte `termios`), so
    /// storing the whole struct wrote 3 bytes past the global (AddressSanitizer's global-buffer-overflow in
    /// `secret set` on a terminal). Allocated once, never freed, like the global it replaces.
    nonisolated(unsafe) static let settings: UnsafeMutablePointer<termios> = {
        let storage = UnsafeMutablePointer<termios>.allocate(capacity: 1)
        storage.initialize(to: termios())
        return storage
    }()
    static let fatalSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
}

/// Restores the terminal, puts the default action back and raises the signal again (tcsetattr,
/// signal and raise are async-signal-safe).
private func restoreTerminalAndDie(_ number: Int32) {
    _ = tcsetattr(EchoRestorer.fd, TCSANOW, EchoRestorer.settings)
    signal(number, SIG_DFL)
    raise(number)
}
