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

    /// The executable: `$SESSIONKEEPER_BINARY` when set, else the one SwiftPM built beside this test bundle.
    static let executable: URL? = builtProgram("sessionkeeper", override: "SESSIONKEEPER_BINARY").map {
        URL(fileURLWithPath: $0)
    }

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
