import Foundation

/// A process's anonymous resident memory (`RssAnon` of `/proc/PID/status`): the heap, stacks and anonymous
/// mappings it holds in RAM, without the pages of its program and libraries, which the page cache shares.
/// What a buffer that grows with the data would show up in. nil when the file or the line cannot be read.
///
/// - Parameter pid: the process; nil for this one.
public func residentAnonymousBytes(pid: Int32? = nil) -> Int? {
    let file = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
    guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("RssAnon:") {
        // "RssAnon:	   12345 kB"
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, let kilobytes = Int(fields[1]) else { return nil }
        return kilobytes * 1024
    }
    return nil
}
