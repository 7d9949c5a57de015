import Foundation
import Locking
import Platform
import SiteConfig
import Vault

/// A credential that could not be resolved: which site, which credential, and why. Never the value.
public struct CredentialError: Error, Sendable, CustomStringConvertible {
    public var site: String
    public var credential: String
    public var reason: String

    public init(site: String, credential: String, reason: String) {
        self.site = site
        self.credential = credential
        self.reason = reason
    }

    public var description: String { "site '\(site)', credential '\(credential)': \(reason)" }
}

/// Resolves a site's `credentials:` entries (SPEC section 3) at login time: literal values, vault
/// secrets, environment variables, private files, commands and TOTP codes. Values are returned to the
/// caller only; nothing here logs or keeps them.
public struct CredentialResolver: Sendable {
    /// How long a `{command: ...}` may run.
    public static let defaultCommandTimeout: Duration = .seconds(30)
    /// The most a `{file: ...}` or a command's output may hold: credentials are short.
    public static let maximumValueSize = 64 * 1024

    /// Receives each line a credential command wrote to standard error (with the command's own output
    /// masked out), for the log: site, credential name, line.
    public typealias StandardErrorSink = @Sendable (_ site: String, _ credential: String, _ line: String) -> Void

    let secrets: (any ItemStore)?
    let environment: [String: String]
    let commandTimeout: Duration
    let clock: @Sendable () -> Date
    let standardError: StandardErrorSink

    /// - Parameters:
    ///   - secrets: the vault's items, where `{secret: NAME}` and TOTP secrets live (the vault folder, or a
    ///     fleet's database); nil makes them fail with a clear error.
    ///   - environment: where `{env: NAME}` is looked up; a `{command: ...}` gets only its PATH, HOME and LANG.
    ///   - clock: the time TOTP codes are computed for.
    public init(
        secrets: (any ItemStore)?, environment: [String: String] = ProcessInfo.processInfo.environment,
        commandTimeout: Duration = CredentialResolver.defaultCommandTimeout,
        clock: @escaping @Sendable () -> Date = { Date() },
        standardError: @escaping StandardErrorSink = { _, _, _ in }
    ) {
        self.secrets = secrets
        self.environment = environment
        self.commandTimeout = commandTimeout
        self.clock = clock
        self.standardError = standardError
    }

    /// The value of credential `name` of `site`. A `{command: ...}` runs as a child process that the call
    /// awaits without holding a thread.
    public func value(of name: String, in site: SiteDefinition) async throws(CredentialError) -> String {
        guard let source = site.credential(named: name) else {
            throw CredentialError(site: site.name, credential: name, reason: "the site defines no such credential")
        }
        return try await resolve(source, credential: name, site: site.name)
    }

    /// The value of one source.
    public func resolve(_ source: CredentialSource, credential: String, site: String) async throws(CredentialError) -> String {
        func fail(_ reason: String) -> CredentialError { CredentialError(site: site, credential: credential, reason: reason) }
        switch source {
        case let .literal(value):
            return value
        case let .secret(name):
            return try text(of: try await secret(name, fail: fail), what: "secret '\(name)'", fail: fail)
        case let .environment(name):
            guard let value = environment[name] else { throw fail("environment variable \(name) is not set") }
            return value
        case let .file(path):
            let bytes: [UInt8]
            do {
                bytes = try PrivateFile.read(path, limit: Self.maximumValueSize, allowingGroup: true)
            } catch {
                throw fail("file refused: \(error)")
            }
            return try text(of: Self.trimmingNewline(bytes), what: "file \(path)", fail: fail)
        case let .command(argv):
            return try await runCommand(argv, site: site, credential: credential, fail: fail)
        case let .totp(parameters):
            return try await totpGenerator(parameters, fail: fail).code(at: clock())
        }
    }

    /// The TOTP generator of credential `name` of `site` when it is a `{totp: ...}` credential (its secret read
    /// and checked now), nil for any other kind: a login computes its codes when the request carrying one is built.
    public func totpGenerator(of name: String, in site: SiteDefinition) async throws(CredentialError) -> TOTPGenerator? {
        guard case let .totp(parameters) = site.credential(named: name) else { return nil }
        return try await totpGenerator(parameters) { CredentialError(site: site.name, credential: name, reason: $0) }
    }

    private func totpGenerator(
        _ parameters: TOTPParameters, fail: (String) -> CredentialError
    ) async throws(CredentialError) -> TOTPGenerator {
        let stored = try text(of: try await secret(parameters.secretName, fail: fail), what: "secret '\(parameters.secretName)'", fail: fail)
        guard let key = Base32.decode(stored), !key.isEmpty else {
            throw fail("secret '\(parameters.secretName)' is not a base32 TOTP secret (letters A-Z and digits 2-7)")
        }
        guard TOTP.digitRange.contains(parameters.digits) else {
            throw fail("totp digits must be within \(TOTP.digitRange.lowerBound)...\(TOTP.digitRange.upperBound), not \(parameters.digits)")
        }
        guard parameters.period >= .seconds(1) else { throw fail("totp period must be at least 1s") }
        return TOTPGenerator(key: key, digits: parameters.digits, period: parameters.period, algorithm: parameters.algorithm)
    }

    private func secret(_ name: String, fail: (String) -> CredentialError) async throws(CredentialError) -> [UInt8] {
        guard let secrets else { throw fail("secret '\(name)' needs the vault, which is not open") }
        let stored: [UInt8]?
        do {
            stored = try await secrets.value(of: ItemReference(.credential, name))
        } catch {
            throw fail("\(error)")
        }
        guard let stored else {
            throw fail("secret '\(name)' is not in the vault; add it with `sessionkeeper secret set \(name)`")
        }
        return stored
    }

    private func text(of bytes: [UInt8], what: String, fail: (String) -> CredentialError) throws(CredentialError) -> String {
        guard let value = String(validating: bytes, as: UTF8.self) else { throw fail("\(what) is not UTF-8 text") }
        return value
    }

    /// Runs a `{command: [argv...]}` as plugins are run (SPEC section 3): no shell, the minimal environment
    /// of ``ChildEnvironment`` (so never the master passphrase), its own process group, a timeout.
    private func runCommand(
        _ argv: [String], site: String, credential: String, fail: (String) -> CredentialError
    ) async throws(CredentialError) -> String {
        let program = argv.first ?? ""
        let command = ChildProcess(
            executable: program, arguments: Array(argv.dropFirst()), environment: ChildEnvironment.minimal(from: environment),
            timeout: commandTimeout, outputLimit: Self.maximumValueSize, outputOverflow: .terminate)
        // Held back until the value is known, so a command that echoes its value to stderr is masked.
        let errorLines = Locked<[String]>([])
        let result: ChildProcessResult
        do {
            result = try await command.run(standardErrorLine: { line in errorLines.withLock { $0.append(line) } })
        } catch {
            throw fail("command: \(error)")
        }
        let stderr = errorLines.withLock { $0 }
        switch result.termination {
        case .timedOut:
            // Its value is not known, so its standard error cannot be masked (a command that printed the secret
            // there and then hung would put it in the log): dropped, only counted.
            let dropped = stderr.filter { !$0.isEmpty }.count
            throw fail("command `\(program)` did not finish within \(commandTimeout) and was killed"
                + (dropped > 0 ? "; its standard error (\(dropped) line(s)) was dropped: it cannot be masked without the value" : ""))
        case .cancelled:
            throw fail("command `\(program)` was stopped: the login was cancelled")
        case .exited, .signaled:
            break
        }
        let value = Self.trimmingNewline(result.standardOutput)
        forward(stderr, masking: value, site: site, credential: credential)
        guard result.termination == .exited(0) else { throw fail("command `\(program)` failed (\(result.termination))") }
        guard !value.isEmpty else { throw fail("command `\(program)` printed nothing") }
        return try text(of: value, what: "the output of `\(program)`", fail: fail)
    }

    /// Sends stderr lines to the sink, with the command's value replaced by `***` should the command have
    /// echoed it there (line by line: a value of several lines is masked in each).
    private func forward(_ lines: [String], masking value: [UInt8]?, site: String, credential: String) {
        let pieces = (value ?? []).split(separator: UInt8(ascii: "\n"))
            .map { String(decoding: Self.trimmingNewline(Array($0)), as: UTF8.self) }
            .filter { !$0.isEmpty }
            .sorted { $0.count > $1.count }
        for line in lines where !line.isEmpty {
            standardError(site, credential, pieces.reduce(line) { $0.replacingOccurrences(of: $1, with: "***") })
        }
    }

    static func trimmingNewline(_ bytes: [UInt8]) -> [UInt8] {
        var result = bytes
        if result.last == UInt8(ascii: "\n") { result.removeLast() }
        if result.last == UInt8(ascii: "\r") { result.removeLast() }
        return result
    }
}

extension MasterKeySource {
    /// The vault key that config.yaml's `vault.key` describes; a `passphrase_command` gets
    /// ``VaultKey/defaultCommandTimeout``.
    public init(_ configured: VaultKeySource) {
        switch configured {
        case let .file(path): self = .keyFile(path: path)
        case let .passphraseEnvironment(name): self = .passphraseEnvironment(name: name)
        case let .passphraseFile(path): self = .passphraseFile(path: path)
        case let .passphraseCommand(argv): self = .passphraseCommand(argv: argv, timeout: VaultKey.defaultCommandTimeout)
        case let .systemdCredential(name): self = .systemdCredential(name: name)
        }
    }
}
