/// The whole environment of a child process (plugins, credential commands, passphrase commands).
///
/// SPEC section 5: a child gets PATH, HOME and LANG and the names its caller lists, never the daemon's
/// whole environment, which may hold the vault passphrase (`vault.key: {passphrase_env: ...}`) and
/// whatever else the service manager passed. Every child is started with one of these, built by
/// ``minimal(from:passing:)`` from an explicit allow-list, so there is one place that decides what a
/// child may see.
public struct ChildEnvironment: Sendable, Hashable {
    /// The variables every child gets from its parent's environment, when set there.
    public static let inheritedNames = ["PATH", "HOME", "LANG"]
    /// PATH for a child whose parent has none: the directories a login shell would search.
    public static let fallbackPATH = "/usr/local/bin:/usr/bin:/bin"

    /// Name to value; exactly what the child receives.
    public private(set) var variables: [String: String]

    /// An environment of exactly `variables`, nothing inherited.
    public init(exactly variables: [String: String]) {
        self.variables = variables
    }

    /// PATH (``fallbackPATH`` when `environment` has none), HOME and LANG from `environment`, plus each
    /// name of `allowed` that `environment` sets. Nothing else of `environment` is passed on.
    public static func minimal(from environment: [String: String], passing allowed: [String] = []) -> ChildEnvironment {
        var variables: [String: String] = [:]
        for name in inheritedNames + allowed {
            variables[name] = environment[name]
        }
        if variables["PATH"] == nil { variables["PATH"] = fallbackPATH }
        return ChildEnvironment(exactly: variables)
    }

    /// Sets (or replaces) one variable.
    public mutating func set(_ name: String, to value: String) {
        variables[name] = value
    }
}
