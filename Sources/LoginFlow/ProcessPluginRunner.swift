import Foundation
import Platform

/// Runs plugins as child processes through `Platform.ChildProcess`, once `Platform.CodeFile` found the plugin
/// and its folders trusted (SPEC section 3): no shell, a process group of its own,
/// no inherited descriptors besides the three pipes, and exactly the environment the invocation lists.
///
/// On timeout, and when the calling task is cancelled, the whole group gets SIGTERM, then SIGKILL after
/// ``terminationGrace``; when the plugin exits, whatever it left running in its group is killed.
public struct ProcessPluginRunner: PluginRunner {
    /// A plugin that prints more than this on standard output is killed at once, its group with it (the
    /// protocol's answer is one small JSON object; more is a runaway, not an answer).
    public static let maximumOutputSize = 8 * 1024 * 1024
    /// A standard error line longer than this is delivered in pieces.
    public static let maximumLineLength = ChildProcess.maximumLineLength
    /// Time between SIGTERM and SIGKILL when a plugin is stopped.
    public static let terminationGrace = ChildProcess.defaultTerminationGrace

    public init() {}

    public func run(
        _ invocation: PluginInvocation, standardErrorLine: @escaping @Sendable (String) -> Void
    ) async throws(PluginLaunchError) -> PluginOutput {
        // Checked when the site loaded, and again here: the file or a folder may have changed since.
        do throws(UntrustedCodeError) {
            try CodeFile.check(invocation.executablePath)
        } catch where !error.problem.isSystemError {
            throw PluginLaunchError(executablePath: invocation.executablePath, message: "refused: \(error)")
        } catch {
            // Not there or not readable: the launch says so in its own words.
        }
        let process = ChildProcess(
            executable: invocation.executablePath, arguments: invocation.arguments,
            environment: ChildEnvironment(exactly: invocation.environment), input: [UInt8](invocation.input),
            timeout: invocation.timeout, terminationGrace: Self.terminationGrace,
            outputLimit: Self.maximumOutputSize, outputOverflow: .terminate)
        let result: ChildProcessResult
        do {
            result = try await process.run(standardErrorLine: standardErrorLine)
        } catch let .launchFailed(_, reason) {
            throw PluginLaunchError(executablePath: invocation.executablePath, message: reason)
        } catch .outputTooLarge {
            return PluginOutput(termination: .signaled(SIGKILL), standardOutput: Data(), outputTruncated: true)
        } catch {
            throw PluginLaunchError(executablePath: invocation.executablePath, message: "\(error)")
        }
        let termination: PluginOutput.Termination
        switch result.termination {
        case let .exited(code): termination = .exited(code)
        case let .signaled(signal): termination = .signaled(signal)
        case .timedOut, .cancelled: termination = .timedOut
        }
        return PluginOutput(
            termination: termination, standardOutput: Data(result.standardOutput), outputTruncated: result.outputTruncated)
    }
}
