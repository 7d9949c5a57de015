import Foundation

/// One execution of a plugin executable (SPEC section 5). The engine composes it: a minimal
/// environment, the JSON document for stdin, the step's timeout.
public struct PluginInvocation: Sendable, Hashable {
    /// Absolute path of the executable; run directly, never through a shell.
    public var executablePath: String
    public var arguments: [String]
    /// The complete environment of the child (nothing else is inherited).
    public var environment: [String: String]
    /// Written to the child's standard input, which is then closed.
    public var input: Data
    /// On expiry the child's whole process group is killed.
    public var timeout: Duration

    public init(
        executablePath: String, arguments: [String] = [], environment: [String: String], input: Data, timeout: Duration
    ) {
        self.executablePath = executablePath
        self.arguments = arguments
        self.environment = environment
        self.input = input
        self.timeout = timeout
    }
}

/// How a plugin process ended and what it wrote.
public struct PluginOutput: Sendable, Hashable {
    public enum Termination: Sendable, Hashable {
        /// Exited on its own with this status.
        case exited(Int32)
        /// Killed by this signal (not by the runner).
        case signaled(Int32)
        /// The timeout ran out; the process group was killed.
        case timedOut
    }

    public var termination: Termination
    /// Standard output, at most ``ProcessPluginRunner/maximumOutputSize`` bytes.
    public var standardOutput: Data
    /// True when standard output went past the cap (the rest was discarded).
    public var outputTruncated: Bool

    public init(termination: Termination, standardOutput: Data, outputTruncated: Bool = false) {
        self.termination = termination
        self.standardOutput = standardOutput
        self.outputTruncated = outputTruncated
    }
}

/// The plugin could not be started at all.
public struct PluginLaunchError: Error, Sendable, Hashable, CustomStringConvertible {
    public var executablePath: String
    public var message: String

    public init(executablePath: String, message: String) {
        self.executablePath = executablePath
        self.message = message
    }

    public var description: String { "cannot run \(executablePath): \(message)" }
}

/// Runs plugin executables. ``ProcessPluginRunner`` is the real one; tests may script answers.
public protocol PluginRunner: Sendable {
    /// Runs the invocation to its end (or its timeout), delivering each standard error line, as written,
    /// to `standardErrorLine` as it arrives; the engine masks secrets before logging them.
    func run(
        _ invocation: PluginInvocation, standardErrorLine: @escaping @Sendable (String) -> Void
    ) async throws(PluginLaunchError) -> PluginOutput
}
