import Foundation
import TestSupport

func readFile(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }

func mode(of path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue ?? -1
}

/// The pid a test's script wrote to `path`, once it is there (the script may still be starting).
func pid(in path: String) async -> Int32? {
    await onDedicatedThread {
        for _ in 0..<200 {
            let text = String(decoding: readFile(path), as: UTF8.self)
            if text.hasSuffix("\n"), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) { return pid }
            usleep(10_000)
        }
        return nil
    }
}

/// The processes of group `group` that still run (zombies waiting to be reaped do not run), from
/// /proc/PID/stat: "pid (comm) state ppid pgrp ...". Checked by the test, never by the code under test.
func runningMembers(ofGroup group: Int32) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> Int32? in
        guard let pid = Int32(entry) else { return nil }
        let stat = String(decoding: readFile("/proc/\(entry)/stat"), as: UTF8.self)
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 2, fields[0] != "Z", Int32(fields[2]) == group else { return nil }
        return pid
    }
}

/// Whether group `group` has no running member, waiting up to two seconds for the kernel to finish the
/// kills (on a dedicated thread: it sleeps between looks).
func groupIsGone(_ group: Int32) async -> Bool {
    await onDedicatedThread {
        for _ in 0..<100 {
            if runningMembers(ofGroup: group).isEmpty { return true }
            usleep(20_000)
        }
        return false
    }
}
