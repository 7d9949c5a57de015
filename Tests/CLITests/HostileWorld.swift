import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import Testing

/// A folder with config.yaml, sites/ and a state folder, in which the built `sessionkeeper` runs as a user
/// runs it (working folder, HOME and PATH set, nothing inherited). For the hostile-input suites.
final class HostileWorld {
    static let defaultConfig = "state_dir: state\nvault: {key: {file: state/master.key}}\n"

    let folder: TemporaryFolder
    var configPath: String { folder.path("config.yaml") }

    init(config: String = HostileWorld.defaultConfig) throws {
        folder = try TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
        try config.write(toFile: configPath, atomically: false, encoding: .utf8)
    }

    /// Removes the folder; called in a `defer` right after creation (see `TemporaryFolder`).
    func cleanUp() { folder.cleanUp() }

    func write(_ relative: String, _ text: String) throws {
        let path = folder.path(relative)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    func write(_ relative: String, bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: folder.path(relative)))
    }

    func link(_ relative: String, to destination: String) throws {
        try? FileManager.default.removeItem(atPath: folder.path(relative))
        try FileManager.default.createSymbolicLink(atPath: folder.path(relative), withDestinationPath: destination)
    }

    /// `sessionkeeper ARGS` in the world's folder.
    func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable, "the sessionkeeper executable was not built beside the tests")
        let result = try await runProgram(
            binary.path, arguments,
            environment: ["PATH": "/usr/bin:/bin", "HOME": folder.url.path].merging(environment) { $1 },
            directory: folder.url.path, input: stdin)
        return CLIRunner.Output(result)
    }

    /// A /bin/sh script in the world's folder, for redirections (`> /dev/full`, `| true`); `"$SK"` is the
    /// executable.
    func shell(_ script: String, environment: [String: String] = [:]) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable, "the sessionkeeper executable was not built beside the tests")
        let result = try await runProgram(
            "/bin/sh", ["-c", script],
            environment: ["PATH": "/usr/bin:/bin", "HOME": folder.url.path, "SK": binary.path].merging(environment) { $1 },
            directory: folder.url.path)
        return CLIRunner.Output(result)
    }

    /// Every entry under the folder without following links: regular files by content, links by target,
    /// folders by name. Two equal snapshots mean nothing was written, created or removed.
    func snapshot(_ relative: String = "") throws -> [String: Data] {
        var entries: [String: Data] = [:]
        let root = relative.isEmpty ? folder.url.path : folder.path(relative)
        guard let names = try? FileManager.default.subpathsOfDirectory(atPath: root) else { return entries }
        for name in names {
            let path = (root as NSString).appendingPathComponent(name)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            switch attributes[.type] as? FileAttributeType {
            case .typeRegular?: entries[name] = try Data(contentsOf: URL(fileURLWithPath: path))
            case .typeSymbolicLink?: entries[name] = Data(try FileManager.default.destinationOfSymbolicLink(atPath: path).utf8)
            default: entries[name] = Data("<\(String(describing: attributes[.type]))>".utf8)
            }
        }
        return entries
    }

    /// The vault's item files (everything but the keyring).
    func vaultItems() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path("state/vault"))) ?? []).filter { $0 != "keyring" && !$0.hasPrefix(".") }
    }

    /// Stores a secret with `secret set NAME` (value on standard input).
    func storeSecret(_ name: String, _ value: String) async throws {
        let stored = try await run(["secret", "set", name, "--config", configPath], stdin: Data(value.utf8))
        try #require(stored.status == 0, "secret set failed: \(stored.stderr)")
    }
}

/// A small tmpfs mounted for one test (root only): a full disk or a read-only state folder.
final class TmpfsMount {
    let path: String

    /// Whether this process may mount (root in a container that allows it), probed once.
    static let available: Bool = {
        guard getuid() == 0 else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("sk-mount-probe-\(getpid())").path
        guard mkdir(probe, 0o700) == 0 else { return false }
        defer { rmdir(probe) }
        guard mount("tmpfs", probe, "tmpfs", 0, "size=64k") == 0 else { return false }
        umount2(probe, Int32(MNT_DETACH))
        return true
    }()

    init(at path: String, size: String = "64k") throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            throw CLIWorldError(message: "mount tmpfs on \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Remounts the file system read-only (MS_REMOUNT | MS_RDONLY).
    func makeReadOnly() throws {
        guard mount("tmpfs", path, "tmpfs", 32 | 1, nil) == 0 else {
            throw CLIWorldError(message: "remount read-only: \(String(cString: strerror(errno)))")
        }
    }

    /// Fills the file system to its last byte.
    func fill() {
        let filler = (path as NSString).appendingPathComponent("filler")
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        guard fd >= 0 else { return }
        let block = [UInt8](repeating: 0x55, count: 4096)
        while block.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) > 0 {}
        var one: UInt8 = 1
        while Glibc.write(fd, &one, 1) > 0 {}
        close(fd)
    }

    deinit { umount2(path, Int32(MNT_DETACH)) }
}
