@testable import Daemon
import Testing

/// How the daemon batches the site folder's changes (SPEC section 7: a change takes effect within 2 seconds).
@Suite struct PendingFileNamesTests {
    /// A burst reported in many parts is one batch: only its first part asks for a read, and the read takes
    /// every name that arrived before it.
    @Test func aBurstInManyPartsIsReadAsOneBatch() {
        let pending = PendingFileNames()
        let signals = (0..<100).filter { pending.add(["site-\($0).yaml"]) }.count
        #expect(signals == 1)
        #expect(pending.takeAll().count == 100)
        #expect(pending.takeAll().isEmpty)
    }

    /// Names that arrive once a batch was taken start the next one; an empty report starts nothing.
    @Test func namesAfterATakeStartTheNextBatch() {
        let pending = PendingFileNames()
        #expect(pending.add([]) == false)
        #expect(pending.add(["a.yaml"]))
        #expect(pending.takeAll() == ["a.yaml"])
        #expect(pending.add(["b.yaml", "c.yaml"]))
        #expect(pending.add(["b.yaml"]) == false)
        #expect(pending.takeAll() == ["b.yaml", "c.yaml", "b.yaml"])
    }
}
