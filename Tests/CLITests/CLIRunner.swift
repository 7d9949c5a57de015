import Foundation
import Testing

/// Runs the built `sessionkeeper` executable as a real process.
struct CLIRunner {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The executable: `$SESSIONKEEPER_BINARY` when set, else the one SwiftPM built beside this test bundle
    /// (the resource bundle and the test runner both sit in the build folder).
    static let executable: URL? = {
        if let path = ProcessInfo.processInfo.environment["SESSIONKEEPER_BINARY"] { return URL(fileURLWithPath: path) }
        let folders = [
            Bundle.module.bundleURL.deletingLastPathComponent(),
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        return folders.map { $0.appendingPathComponent("sessionkeeper") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    static func run(_ arguments: [String]) throws -> Output {
        let binary = try #require(executable, "the sessionkeeper executable was not built beside the tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes before waiting, so a chatty child cannot block on a full pipe.
        let errData = Data.Async(err.fileHandleForReading)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData.wait(), as: UTF8.self))
    }
}

extension Data {
    /// Reads a file handle to its end on another thread.
    final class Async: @unchecked Sendable {
        // @unchecked: `data` is written once by the reader thread before the semaphore is signalled.
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)

        init(_ handle: FileHandle) {
            Thread.detachNewThread { [self] in
                data = handle.readDataToEndOfFile()
                done.signal()
            }
        }

        func wait() -> Data {
            done.wait()
            return data
        }
    }
}

/// A private temporary folder removed when the test ends.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("jar-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
