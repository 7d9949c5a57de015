import Dispatch
import Locking
import Testing

@Suite struct LockedTests {
    /// Many threads adding at once lose no update: every read-modify-write happens under the lock.
    @Test func concurrentUpdatesAreNotLost() {
        let counts = Locked([Int: Int]())
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for step in 0..<10_000 {
                counts.withLock { $0[step % 16, default: 0] += 1 }
            }
        }
        #expect(counts.withLock { $0.values.reduce(0, +) } == 80_000)
        #expect(counts.withLock { $0.count } == 16)
    }

    struct Refused: Error, Equatable {}

    /// What the body returns comes back; what it throws is rethrown with its type, and the lock is released.
    @Test func resultsAndErrorsPassThroughAndTheLockIsReleased() throws {
        let value = Locked("a")
        #expect(value.withLock { text -> Int in
            text += "b"
            return text.count
        } == 2)
        #expect(throws: Refused()) {
            try value.withLock { (_: inout String) throws(Refused) in throw Refused() }
        }
        // Released after the throw: taking it again does not block.
        #expect(value.withLock { $0 } == "ab")
    }
}
