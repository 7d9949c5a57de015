@testable import Platform
import Testing

/// ``ProcessArguments``: the runtime's arguments, or the kernel's copy when a preloaded library left the runtime
/// with none.
@Suite struct ProcessArgumentsTests {
    @Test func theRuntimesArgumentsWinAndTheKernelsCopyIsNotRead() {
        var read = false
        let arguments = ProcessArguments.resolve(runtime: ["sessionkeeper", "run"]) {
            read = true
            return Array("other\0".utf8)
        }
        #expect(arguments == ["sessionkeeper", "run"])
        #expect(!read)
    }

    @Test func withNoneFromTheRuntimeTheKernelsCopyIsSplitAtEachNul() {
        let cmdline = Array("/usr/local/bin/sessionkeeper\0cookie\0demo site\0\0".utf8)
        #expect(ProcessArguments.resolve(runtime: []) { cmdline } == ["/usr/local/bin/sessionkeeper", "cookie", "demo site", ""])
        // Unreadable or empty: nothing to add.
        #expect(ProcessArguments.resolve(runtime: []) { nil } == [])
        #expect(ProcessArguments.resolve(runtime: []) { [] } == [])
    }

    @Test func thisProcessHasItsArguments() {
        #expect(!ProcessArguments.current.isEmpty)
    }
}
