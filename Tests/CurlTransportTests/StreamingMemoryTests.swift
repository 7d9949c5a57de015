import Foundation
import TestSupport
import Testing

/// Backpressure as a user sees it: a stream of 100 MiB either way leaves the process's anonymous memory
/// (RssAnon) nearly where it was. Measured in `stream-memory-probe` (Tests/StreamMemoryProbe), a process of its
/// own, since the other tests of this process allocate while they run in parallel. One stream at a time: each
/// keeps a core busy for a few seconds, and the rest of the suite shares the machine.
@Suite("Streaming memory, measured in a process of its own", .serialized)
struct StreamingMemoryTests {
    static let size = 100 * 1024 * 1024
    /// What a stream may add: a few parts, libcurl's buffers, the allocator's slack. Without backpressure the
    /// body would pile up: 100 MiB.
    static let allowedGrowth = 8 * 1024 * 1024

    struct Report: Decodable {
        var baseline: Int
        var peak: Int
        var status: Int
        var received: Int?
        var sent_sha256: String?
        var answer: String?

        var growth: Int { peak - baseline }
    }

    private func probe(_ arguments: [String]) async throws -> Report {
        let program = try #require(
            builtProgram("stream-memory-probe"),
            "no stream-memory-probe executable beside the tests; build it first (swift build --build-tests builds it)")
        let result = try await runProgram(program, arguments)
        #expect(result.status == 0, "\(result.errorText)")
        return try JSONDecoder().decode(Report.self, from: result.standardOutput)
    }

    // One framing each way, to keep the suite's load down: StreamingTests covers the other ones with small bodies.
    @Test("a slow reader of 100 MiB holds a few parts, not the body")
    func slowReader() async throws {
        try await withServer { server, _ in
            let url = server.url("/big?size=\(Self.size)")
            let report = try await probe(["download", url.absoluteString])
            #expect(report.status == 200)
            #expect(report.received == Self.size)
            #expect(report.growth < Self.allowedGrowth, "RssAnon grew by \(report.growth / 1024) KiB while 100 MiB streamed")
        }
    }

    @Test("a streamed upload of 100 MiB arrives intact, read only as fast as a slow server takes it")
    func upload() async throws {
        try await withServer { server, _ in
            // The server sleeps after each 256 KiB it reads (at most 128 MB/s), so the generated body could run
            // far ahead of it.
            let url = server.url("/upload-hash?delay=0.002")
            let report = try await probe(["upload", url.absoluteString, String(Self.size)])
            #expect(report.status == 200)
            let answer = try JSONDecoder().decode(UploadAnswer.self, from: Data((report.answer ?? "").utf8))
            #expect(answer.method == "POST")
            #expect(answer.length == Self.size)
            #expect(answer.sha256 == report.sent_sha256, "the server hashed exactly the bytes sent")
            #expect(answer.content_length == nil)
            #expect(answer.transfer_encoding == "chunked")
            #expect(report.growth < Self.allowedGrowth, "RssAnon grew by \(report.growth / 1024) KiB while 100 MiB went out")
        }
    }
}
