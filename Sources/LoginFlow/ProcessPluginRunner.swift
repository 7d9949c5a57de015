import Foundation
import Glibc
import Synchronization

/// Runs plugins as child processes with `posix_spawn`: no shell, its own process group
/// (`POSIX_SPAWN_SETPGROUP`), default signal dispositions and an empty signal mask, no inherited file
/// descriptors besides the three pipes, and only the environment the invocation lists.
///
/// One dedicated thread per run writes stdin, reads stdout and stderr with `poll`, and enforces the
/// timeout: on expiry the whole group gets SIGTERM, then SIGKILL after ``terminationGrace``. When the
/// plugin itself exits, whatever it left running in its group is killed so that no orphan outlives it.
public struct ProcessPluginRunner: PluginRunner {
    /// Standard output beyond this is discarded (the protocol's answer is a small JSON object).
    public static let maximumOutputSize = 8 * 1024 * 1024
    /// A standard error line longer than this is delivered in pieces.
    public static let maximumLineLength = 4096
    /// Time between SIGTERM and SIGKILL on timeout.
    public static let terminationGrace: Duration = .seconds(1)
    /// After the plugin exits, how long its pipes may stay open (held by a process that left the group).
    static let drainGrace: Duration = .seconds(2)

    public init() {}

    public func run(
        _ invocation: PluginInvocation, standardErrorLine: @escaping @Sendable (String) -> Void
    ) async throws(PluginLaunchError) -> PluginOutput {
        let cancelled = CancellationFlag()
        let outcome: Result<PluginOutput, PluginLaunchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread {
                    continuation.resume(
                        returning: PluginProcess.run(invocation, cancelled: cancelled, standardErrorLine: standardErrorLine))
                }
                thread.name = "plugin \(URL(fileURLWithPath: invocation.executablePath).lastPathComponent)"
                thread.start()
            }
        } onCancel: {
            cancelled.set()
        }
        return try outcome.get()
    }
}

/// Lets the I/O thread see the task's cancellation.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
