import Foundation
import TestSupport
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

    /// Runs `sessionkeeper ARGS` (standard input /dev/null) to its end on a dedicated thread. The jar suite's
    /// hundreds of parameterised cases call this, so it takes one of the shared program slots.
    static func run(_ arguments: [String]) async throws -> Output {
        let binary = try #require(executable, "the sessionkeeper executable was not built beside the tests")
        return Output(try await runProgramInSharedSlot(binary.path, arguments))
    }
}

extension CLIRunner.Output {
    init(_ result: ProgramResult) {
        self.init(status: result.status, stdout: result.outputText, stderr: result.errorText)
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
