/// Standard output of a child, kept up to a limit; what comes after the limit is counted as overflow and
/// dropped, so a chatty program can still be drained to its end.
struct OutputBuffer {
    let limit: Int
    private(set) var bytes: [UInt8] = []
    /// True once more than `limit` bytes arrived.
    private(set) var truncated = false

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        let room = limit - bytes.count
        if chunk.count > room { truncated = true }
        if room > 0 { bytes.append(contentsOf: chunk.prefix(room)) }
    }
}

/// Cuts a byte stream into lines as it arrives: LF ends a line (a CR before it is dropped), a line longer
/// than `maximumLength` comes out in pieces of that length, and a last line without LF comes out at the
/// end. Pieces are decoded as UTF-8 with invalid bytes replaced.
struct LineSplitter {
    let maximumLength: Int
    private var pending: [UInt8] = []
    /// The last piece was cut at `maximumLength`: a line end right after it ends that line, not an empty one.
    private var cutMidLine = false

    init(maximumLength: Int) {
        self.maximumLength = max(1, maximumLength)
    }

    mutating func append(_ chunk: UnsafeRawBufferPointer, _ emit: (String) -> Void) {
        for byte in chunk {
            if byte == UInt8(ascii: "\n") {
                if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                if !(cutMidLine && pending.isEmpty) { emit(String(decoding: pending, as: UTF8.self)) }
                pending.removeAll(keepingCapacity: true)
                cutMidLine = false
            } else {
                pending.append(byte)
                cutMidLine = false
                if pending.count == maximumLength {
                    emit(String(decoding: pending, as: UTF8.self))
                    pending.removeAll(keepingCapacity: true)
                    cutMidLine = true
                }
            }
        }
    }

    /// Delivers what is left after the stream ended.
    mutating func finish(_ emit: (String) -> Void) {
        guard !pending.isEmpty else { return }
        emit(String(decoding: pending, as: UTF8.self))
        pending.removeAll()
    }
}
