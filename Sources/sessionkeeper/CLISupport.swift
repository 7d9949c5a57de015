import ArgumentParser
import Foundation
import Locking
import Platform
import Sessions

/// Exit codes of SPEC section 9.
enum Exit {
    static let ok: Int32 = 0
    /// The operation failed (a login, a check that found problems).
    static let failed: Int32 = 1
    /// Usage or configuration error: bad arguments, unreadable or invalid files.
    static let usage: Int32 = 2
    /// The daemon's socket did not answer.
    static let daemonUnreachable: Int32 = 3
}

/// An error the CLI reports as one line on stderr, `sessionkeeper: message`, then exits with `code`.
struct CLIFailure: Error, CustomStringConvertible {
    var message: String
    var code: Int32

    static func usage(_ message: String) -> CLIFailure { CLIFailure(message: message, code: Exit.usage) }
    static func failed(_ message: String) -> CLIFailure { CLIFailure(message: message, code: Exit.failed) }

    var description: String { message }
}

extension CLIFailure {
    /// The failure a library's error in the user's words stands for: bad input exits 2, anything else 1. Nil
    /// for an error that has no such words.
    static func reporting(_ error: any Error) -> CLIFailure? {
        switch error {
        case let failure as CLIFailure: failure
        case let jar as JarFileError: CLIFailure(message: jar.message, code: jar.kind == .badInput ? Exit.usage : Exit.failed)
        case let stored as StoredSessionError: CLIFailure.failed(stored.description)
        default: nil
        }
    }
}

extension AsyncParsableCommand {
    /// Runs `body`, turning a ``CLIFailure`` into its one-line message and exit code, so no subcommand
    /// prints a stack of Swift error descriptions.
    func reportingFailures(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            guard let failure = CLIFailure.reporting(error) else { throw error }
            Console.err("sessionkeeper: \(failure.message)")
            throw ExitCode(failure.code)
        }
    }
}

extension ParsableCommand {
    /// ``AsyncParsableCommand/reportingFailures(_:)`` for the client commands that run on the main thread
    /// without ever suspending: a command that only asks the daemon starts no thread of Swift's pool
    /// (issue 15: `cookie` must start about as fast as `curl --unix-socket`).
    func reportingFailuresOnThisThread(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            guard let failure = CLIFailure.reporting(error) else { throw error }
            Console.err("sessionkeeper: \(failure.message)")
            throw ExitCode(failure.code)
        }
    }

    /// Runs async work (reading the vault, which only the slow path of a client command needs) from such a
    /// command, blocking the main thread until it is done; it runs on Swift's pool, which it starts.
    func waitingFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<T, any Error>?>(nil)
        Task.detached {
            let result: Result<T, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw CLIFailure.failed("internal: no result") }
        return try result.get()
    }
}

/// Standard output and error, written unbuffered with every failure handled.
///
/// A failed write to standard output (a full disk, `> /dev/full`) is a message on stderr and exit 1, never
/// a trap; a closed pipe (`| head -0`) ends the command quietly, as `cat` does. A failed write to standard
/// error is dropped: there is nowhere left to tell.
enum Console {
    static func out(_ line: String) { outRaw(line + "\n") }
    static func err(_ line: String) { errRaw(line + "\n") }

    static func outRaw(_ text: String) {
        var text = text
        // withUTF8 rethrows untyped errors only, so the failure comes out as a value.
        let failure: SystemError? = text.withUTF8 { bytes in
            do throws(SystemError) {
                try Syscall.writeAll(STDOUT_FILENO, UnsafeRawBufferPointer(bytes), path: nil)
                return nil
            } catch {
                return error
            }
        }
        guard let failure else { return }
        if failure.errno == EPIPE { Foundation.exit(Exit.failed) }
        errRaw("sessionkeeper: cannot write to standard output: \(BoundedReadError.system(failure).reason)\n")
        Foundation.exit(Exit.failed)
    }

    static func errRaw(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            try? Syscall.writeAll(STDERR_FILENO, UnsafeRawBufferPointer(bytes), path: nil)
        }
    }
}

/// `--now` and other RFC 3339 instants (`2015-01-01T00:00:00Z`, with optional fractional seconds or
/// an offset).
enum RFC3339 {
    static func parse(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}

/// The `--now` option shared by offline commands.
struct ClockOptions: ParsableArguments {
    @Option(name: .long, help: "Use this RFC 3339 time as the current time (for tests and debugging).")
    var now: String?

    func currentDate() throws -> Date {
        guard let now else { return Date() }
        guard let date = RFC3339.parse(now) else {
            throw CLIFailure.usage("--now: '\(now)' is not an RFC 3339 time such as 2015-01-01T00:00:00Z")
        }
        return date
    }
}
