import Foundation
import Platform

/// Where the secret that unlocks the vault comes from (`vault.key` in config.yaml, SPEC section 2).
public enum MasterKeySource: Sendable, Hashable, CustomStringConvertible {
    /// A file of exactly 32 random bytes, mode 0600 (created on first run).
    case keyFile(path: String)
    /// A passphrase in an environment variable.
    case passphraseEnvironment(name: String)
    /// A passphrase in a file only its owner can read (one trailing newline is dropped).
    case passphraseFile(path: String)
    /// A passphrase printed by a command, run without a shell (trailing newline dropped).
    case passphraseCommand(argv: [String], timeout: Duration)
    /// A systemd credential, `$CREDENTIALS_DIRECTORY/NAME` (`LoadCredential=` / `LoadCredentialEncrypted=`):
    /// 32 bytes are used as a key, anything else as a passphrase.
    case systemdCredential(name: String)
    /// A passphrase given directly (the CLI's prompt for `vault rekey`). Its description never shows it.
    case passphrase(VaultPassphrase)

    /// Says where the key comes from; never the key.
    public var description: String {
        switch self {
        case let .keyFile(path): return "key file \(path)"
        case let .passphraseEnvironment(name): return "the passphrase in $\(name)"
        case let .passphraseFile(path): return "the passphrase file \(path)"
        case let .passphraseCommand(argv, _): return "the passphrase printed by `\(argv.first ?? "")`"
        case let .systemdCredential(name): return "systemd credential \(name)"
        case .passphrase: return "the passphrase given"
        }
    }
}

/// A passphrase held in memory; printing it shows nothing.
public struct VaultPassphrase: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var description: String { "<passphrase>" }
    public var debugDescription: String { "<passphrase>" }
}

/// The secret obtained from a ``MasterKeySource``.
struct KeyMaterial {
    enum Kind { case key, passphrase, either }
    var bytes: [UInt8]
    var kind: Kind
}

/// Obtaining key material, and creating key files.
public enum VaultKey {
    /// A key file's exact size: 256 bits for AES-256.
    public static let keyFileSize = 32
    /// The most a key file, passphrase file or passphrase command may give: passphrases are short.
    static let passphraseLimit = 64 * 1024
    /// How long a `passphrase_command` may run when config gives no timeout.
    public static let defaultCommandTimeout: Duration = .seconds(30)

    /// Creates a key file of 32 random bytes with mode 0600; refuses to overwrite an existing file.
    public static func createKeyFile(at path: String) throws(VaultError) {
        if Syscall.exists(path) { throw VaultError(.keySource("key file \(path) already exists; refusing to overwrite it")) }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<keyFileSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        do {
            let folder = (path as NSString).deletingLastPathComponent
            if !folder.isEmpty && !Syscall.exists(folder) { try DurableFile.makePrivateFolder(folder) }
            try DurableFile.write(bytes, to: path, mode: 0o600)
        } catch {
            throw VaultError(.io(error))
        }
    }

    static func material(
        from source: MasterKeySource, environment: [String: String]
    ) throws(VaultError) -> KeyMaterial {
        switch source {
        case let .keyFile(path):
            let bytes = try readPrivate(path, what: "key file")
            guard bytes.count == keyFileSize else {
                throw VaultError(.keySource("key file \(path) holds \(bytes.count) bytes; a key file holds exactly \(keyFileSize) random bytes"))
            }
            return KeyMaterial(bytes: bytes, kind: .key)
        case let .passphraseEnvironment(name):
            guard let value = environment[name], !value.isEmpty else {
                throw VaultError(.keySource("environment variable \(name) (vault passphrase) is not set or empty"))
            }
            return KeyMaterial(bytes: Array(value.utf8), kind: .passphrase)
        case let .passphraseFile(path):
            let bytes = trimmingNewline(try readPrivate(path, what: "passphrase file"))
            guard !bytes.isEmpty else { throw VaultError(.keySource("passphrase file \(path) is empty")) }
            return KeyMaterial(bytes: bytes, kind: .passphrase)
        case let .passphraseCommand(argv, timeout):
            let program = argv.first ?? ""
            // The minimal environment: whatever else this process holds (a passphrase in another variable,
            // the service manager's settings) is not the command's business. Its stderr is dropped: a
            // failing command may echo what it was given.
            let command = ChildProcess(
                executable: program, arguments: Array(argv.dropFirst()), environment: ChildEnvironment.minimal(from: environment),
                timeout: timeout, outputLimit: passphraseLimit, outputOverflow: .terminate)
            let result: ChildProcessResult
            do {
                result = try command.runBlocking()
            } catch {
                throw VaultError(.keySource("passphrase command: \(error)"))
            }
            if result.termination == .timedOut {
                throw VaultError(.keySource("passphrase command `\(program)` did not finish within \(timeout) and was killed"))
            }
            guard result.termination == .exited(0) else {
                throw VaultError(.keySource("passphrase command `\(program)` failed (\(result.termination))"))
            }
            let bytes = trimmingNewline(result.standardOutput)
            guard !bytes.isEmpty else { throw VaultError(.keySource("passphrase command `\(program)` printed nothing")) }
            return KeyMaterial(bytes: bytes, kind: .passphrase)
        case let .systemdCredential(name):
            guard let folder = environment["CREDENTIALS_DIRECTORY"], !folder.isEmpty else {
                throw VaultError(.keySource("systemd credential \(name): $CREDENTIALS_DIRECTORY is not set (systemd sets it for a unit with LoadCredential=)"))
            }
            guard !name.contains("/"), !name.isEmpty, name != ".", name != ".." else {
                throw VaultError(.keySource("systemd credential name '\(name)' must be a plain file name"))
            }
            let bytes = try readPrivate(folder + "/" + name, what: "systemd credential")
            if bytes.count == keyFileSize { return KeyMaterial(bytes: bytes, kind: .either) }
            let passphrase = trimmingNewline(bytes)
            guard !passphrase.isEmpty else { throw VaultError(.keySource("systemd credential \(name) is empty")) }
            return KeyMaterial(bytes: passphrase, kind: .passphrase)
        case let .passphrase(passphrase):
            guard !passphrase.bytes.isEmpty else { throw VaultError(.keySource("the passphrase is empty")) }
            return KeyMaterial(bytes: passphrase.bytes, kind: .passphrase)
        }
    }

    static func readPrivate(_ path: String, what: String) throws(VaultError) -> [UInt8] {
        do {
            return try PrivateFile.read(path, limit: passphraseLimit)
        } catch let .system(error) where error.errno == ENOENT {
            throw VaultError(.keySource("\(what) \(path) does not exist"))
        } catch {
            throw VaultError(.keySource("\(what) refused: \(error)"))
        }
    }

    static func trimmingNewline(_ bytes: [UInt8]) -> [UInt8] {
        var result = bytes
        if result.last == UInt8(ascii: "\n") { result.removeLast() }
        if result.last == UInt8(ascii: "\r") { result.removeLast() }
        return result
    }
}
