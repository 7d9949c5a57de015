import Foundation
import Testing
@testable import SiteConfig

/// Whatever the bytes, loading answers with a site or with diagnostics that point inside the file:
/// truncations at every position and deterministic byte mutations of every shipped file.
@Suite struct RobustnessTests {
    static func shippedFiles() throws -> [String] {
        let sites = Paths.repository.appendingPathComponent("sites").path
        let names = try FileManager.default.contentsOfDirectory(atPath: sites).filter { $0.hasSuffix(".yaml") }.sorted()
        return [Paths.repository.appendingPathComponent("config.yaml").path] + names.map { sites + "/" + $0 }
            + [Paths.fixture("valid/full.yaml")]
    }

    /// Loads `bytes` as `file` would be loaded; true when it either loads or fails with sane marks.
    static func survives(_ bytes: [UInt8], as file: String, config: DaemonConfig) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        let lineCount = text.reduce(1) { $1 == "\n" ? $0 + 1 : $0 } + 1
        do {
            if file.hasSuffix("config.yaml") {
                _ = try loader.loadConfig(text: text, file: file)
            } else {
                _ = try loader.loadSite(text: text, file: file, config: config)
            }
            return true
        } catch {
            let sane = !error.diagnostics.isEmpty && error.diagnostics.allSatisfy {
                $0.mark.line >= 1 && $0.mark.line <= lineCount && $0.mark.column >= 1 && !$0.message.isEmpty
                    && $0.message != "the site could not be built from this file"
            }
            if !sane { print("unexpected diagnostics for \(file): \(error.diagnostics)") }
            return sane
        }
    }

    @Test(arguments: try RobustnessTests.shippedFiles())
    func truncatedAtEveryPosition(_ file: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let config = try repositoryConfig()
        for length in 0...bytes.count {
            let survived = Self.survives(Array(bytes[0..<length]), as: file, config: config)
            #expect(survived, "\(file) cut at \(length)")
        }
    }

    @Test(arguments: try RobustnessTests.shippedFiles())
    func mutatedBytes(_ file: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let config = try repositoryConfig()
        // Bytes that matter to YAML's structure, plus invalid UTF-8 and NUL.
        let replacements: [UInt8] = Array(":-[]{}&*!|>'\"#%@`,?\t\n ".utf8) + [0x00, 0xFF, 0xC3]
        var generator = SplitMix64(seed: UInt64(bitPattern: Int64(file.utf8.count)))
        for round in 0..<400 {
            var mutated = bytes
            for _ in 0..<(1 + round % 4) {
                let position = Int(generator.next() % UInt64(mutated.count))
                switch generator.next() % 3 {
                case 0: mutated[position] = replacements[Int(generator.next() % UInt64(replacements.count))]
                case 1: mutated.remove(at: position)
                default: mutated.insert(replacements[Int(generator.next() % UInt64(replacements.count))], at: position)
                }
                if mutated.isEmpty { mutated = [0x20] }
            }
            let survived = Self.survives(mutated, as: file, config: config)
            #expect(survived, "\(file) round \(round)")
        }
    }

    @Test func hostileShapes() throws {
        let config = fixtureConfig()
        let cases = [
            String(repeating: "- ", count: 300) + "x",
            String(repeating: "{a: ", count: 300),
            "base_url: &a [*a]",
            "login: {steps: [{get: /, extract: {x: {url: {query: {deep: [1]}}}}}]}\nbase_url: http://a",
            "base_url: http://a\nlogin: {steps: [{get: \"{{\"}]}\n",
            "\u{FEFF}base_url: http://a\nlogin: manual\n",
            "base_url: http://a\nlogin: manual\n" + String(repeating: "x: 1\n", count: 2000),
        ]
        for text in cases {
            let survived = Self.survives(Array(text.utf8), as: Paths.fixture("hostile.yaml"), config: config)
            #expect(survived, "\(text.prefix(40))")
        }
    }
}

/// Deterministic pseudo-random numbers (SplitMix64), so a failing mutation can be replayed.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
