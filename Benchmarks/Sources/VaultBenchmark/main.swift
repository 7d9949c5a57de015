// VaultBenchmark: (a) the update of one site's item — encrypt, write a temporary file, fsync, rename,
// fsync the folder — median, p90 and p99 over many updates; (b) opening a vault of 10,000 items: unlock
// the keyring, list every item (decrypting all 10,000 files, as the daemon does at start) and read
// each value. Goals (issue 5): median update under 2 ms, opening under 1 s. Build with `-c release`.
//
// Usage: VaultBenchmark [--dir PATH] [--items N] [--updates N] [--value-bytes N]
// The folder (default ./vault-benchmark.tmp, on the disk being measured, not a tmpfs) is removed after.
import Foundation
import Platform
import Vault

func argument(_ name: String, default value: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return value }
    return arguments[index + 1]
}

let root = argument("--dir", default: FileManager.default.currentDirectoryPath + "/vault-benchmark.tmp")
let itemCount = Int(argument("--items", default: "10000"))!
let updateCount = Int(argument("--updates", default: "1000"))!
let valueBytes = Int(argument("--value-bytes", default: "8192"))!

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
}

/// A site's state of `size` bytes (cookie JSON in real use; content does not matter to AES-GCM).
func siteState(_ index: Int, size: Int) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ index) }
}

try? FileManager.default.removeItem(atPath: root)
defer { try? FileManager.default.removeItem(atPath: root) }
let clock = ContinuousClock()
let keyFile = root + "/master.key"
let state = root + "/state"

do {
    // (a) updates of one site's item.
    let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: keyFile), createIfMissing: true)
    let site = ItemReference(.siteState, "wiki")
    try vault.set(siteState(0, size: valueBytes), for: site)
    // Interleaved with the floor set by the disk — the same durable write sequence of a file of the
    // same size, unencrypted — so both see the same disk load.
    var samples: [Double] = []
    var floor: [Double] = []
    samples.reserveCapacity(updateCount)
    floor.reserveCapacity(updateCount)
    let plainPath = root + "/plain-baseline"
    for index in 0..<updateCount {
        let value = siteState(index, size: valueBytes)
        samples.append(milliseconds(try clock.measure { try vault.set(value, for: site) }))
        let plain = siteState(index, size: valueBytes + 41)
        floor.append(milliseconds(try clock.measure { try DurableFile.write(plain, to: plainPath) }))
    }
    samples.sort()
    floor.sort()
    print("update of one site's item (\(valueBytes) B; encrypt, write, fsync, rename, fsync folder), \(updateCount) runs:")
    print(String(format: "  median %.3f ms   p90 %.3f ms   p99 %.3f ms   max %.3f ms  (goal: median < 2 ms)",
                 percentile(samples, 0.5), percentile(samples, 0.9), percentile(samples, 0.99), samples.last!))
    print(String(format: "  floor, the same durable write unencrypted (DurableFile.write): median %.3f ms   p90 %.3f ms",
                 percentile(floor, 0.5), percentile(floor, 0.9)))

    // (b) a vault of `itemCount` items: half site states (2 KiB), half credentials (32 B).
    let fill = try clock.measure {
        for index in 0..<itemCount {
            if index % 2 == 0 {
                try vault.set(siteState(index, size: 2048), for: ItemReference(.siteState, "site-\(index)"))
            } else {
                try vault.set(Array("credential-\(index)".utf8), for: ItemReference(.credential, "site-\(index)/password"))
            }
        }
    }
    vault.close()
    print(String(format: "filled %d items in %.1f s (durable writes)", itemCount, milliseconds(fill) / 1000))

    var openTimes: [Double] = []
    var listTimes: [Double] = []
    for _ in 0..<5 {
        var opened: Vault?
        let openOnly = try clock.measure {
            opened = try Vault.open(stateDirectory: state, key: .keyFile(path: keyFile))
        }
        let listed = try clock.measure {
            // What the daemon does at start: every site's state in one pass, plus the credential names.
            let sites = try opened!.contents(of: .siteState)
            let credentials = try opened!.names(of: .credential)
            precondition(sites.values.count + credentials.names.count == itemCount + 1 && sites.problems.isEmpty,
                         "listing incomplete")
        }
        opened!.close()
        openTimes.append(milliseconds(openOnly))
        listTimes.append(milliseconds(openOnly + listed))
    }
    openTimes.sort()
    listTimes.sort()
    print("open a vault of \(itemCount) items (warm page cache), 5 runs:")
    print(String(format: "  unlock keyring: median %.2f ms", percentile(openTimes, 0.5)))
    print(String(format: "  unlock + every site's state (decrypt every file) + credential names (decrypt again): median %.0f ms, worst %.0f ms  (goal: < 1000 ms)",
                 percentile(listTimes, 0.5), listTimes.last!))
} catch {
    print("VaultBenchmark failed: \(error)")
    exit(1)
}
