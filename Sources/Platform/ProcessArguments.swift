/// The command line this process was started with.
///
/// A statically linked Swift program on Linux finds its arguments through the process's initial environment
/// block. A library preloaded with `LD_PRELOAD` that changes the environment in its constructor (libfaketime
/// does, and so would any `setenv` there) moves that block before the Swift runtime looks, and the program then
/// sees no arguments at all (`CommandLine.argc` is 0): `sessionkeeper run` would print the help and exit.
/// The kernel's copy in `/proc/self/cmdline` is untouched by any of that, so it is read instead when the
/// runtime has none.
public enum ProcessArguments {
    /// Room for any command line Linux accepts (ARG_MAX is far larger, but a line that long is no command).
    static let cmdlineLimit = 1 << 20

    /// The arguments, the program's own name first.
    public static var current: [String] {
        resolve(runtime: CommandLine.arguments) { try? DurableFile.read("/proc/self/cmdline", limit: cmdlineLimit) }
    }

    /// `runtime` when it holds the program's name; else the arguments in `cmdline` (NUL-terminated strings),
    /// read only then.
    static func resolve(runtime: [String], cmdline: () -> [UInt8]?) -> [String] {
        guard runtime.isEmpty, let bytes = cmdline(), !bytes.isEmpty else { return runtime }
        var arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        // The last argument ends with a NUL, which leaves one empty piece after it.
        if bytes.last == 0 { arguments.removeLast() }
        return arguments
    }
}
