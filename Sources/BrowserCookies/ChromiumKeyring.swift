import Platform

/// The password Chromium keeps in the desktop keyring for its `v11` values, asked of the Secret Service
/// (GNOME Keyring, KeePassXC, KWallet's Secret Service) with `secret-tool lookup application chromium`:
/// Chromium stores it under the attribute `application` = `chromium`.
///
/// `secret-tool` runs as plugins do (`Platform.ChildProcess`, no shell, a minimal environment), with the
/// variables that reach the desktop session's bus added. Its output is the password: never logged, and its
/// standard error is discarded.
struct ChromiumKeyring: Sendable {
    static let program = "secret-tool"
    static let arguments = ["lookup", "application", "chromium"]
    /// What the session bus needs besides PATH, HOME and LANG (an unlock prompt needs the display).
    static let passedVariables = ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY"]
    /// Long enough for a person to unlock the keyring when it asks.
    static let timeout: Duration = .seconds(60)
    static let outputLimit = 4096

    var environment: [String: String]

    var command: String { ([Self.program] + Self.arguments).joined(separator: " ") }

    func password() async throws(BrowserCookieError) -> [UInt8] {
        let process = ChildProcess(
            executable: Self.program, arguments: Self.arguments,
            environment: ChildEnvironment.minimal(from: environment, passing: Self.passedVariables),
            timeout: Self.timeout, outputLimit: Self.outputLimit, outputOverflow: .terminate)
        let result: ChildProcessResult
        do {
            result = try await process.run(standardErrorLine: nil)
        } catch .launchFailed(_, let reason) {
            throw .keyringUnavailable(reason: "`\(command)` cannot run (\(reason); Debian's libsecret-tools package has it)")
        } catch {
            throw .keyringUnavailable(reason: "`\(command)` failed: \(error)")
        }
        var password = result.standardOutput
        if password.last == 0x0A { password.removeLast() }
        switch result.termination {
        case .exited(0) where !password.isEmpty:
            return password
        case .exited(0):
            throw .keyringUnavailable(reason: "`\(command)` found no password")
        case .timedOut:
            throw .keyringUnavailable(reason: "`\(command)` did not answer within \(Self.timeout.components.seconds) s")
        default:
            throw .keyringUnavailable(reason: "no keyring answered `\(command)` (\(result.termination))")
        }
    }
}
