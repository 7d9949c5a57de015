/// The version of SessionKeeper, in the one place the CLI (`--version`) and the libraries (the default
/// User-Agent) read it from.
public enum SessionKeeperVersion {
    /// `MAJOR.MINOR.PATCH`.
    public static let string = "0.1.0"

    /// The User-Agent a site sends when neither its file nor `defaults.http` names one (SPEC section 3:
    /// "default SessionKeeper/VERSION, never none").
    public static var userAgent: String { "SessionKeeper/\(string)" }
}
