/// What `{{ name }}` may refer to at one point of a flow.
struct VariableScope {
    var credentials: [String]
    var allowEnv: [String]
    var extracted: Set<String>
    /// After a plugin step that does not list `provides:`, any plain name may exist.
    var open: Bool

    static let siteVariables = ["base_url", "name"]

    /// Why `variable` cannot be used here (with a "did you mean" when one is close), or nil when it can.
    func problem(with variable: String) -> String? {
        let parts = variable.split(separator: ".", maxSplits: 1).map(String.init)
        if parts.count == 2 {
            switch parts[0] {
            case "credentials":
                if credentials.contains(parts[1]) { return nil }
                var message = "'{{ \(variable) }}': no credential named '\(parts[1])'"
                if let suggestion = Spelling.closest(to: parts[1], among: credentials) {
                    message += "; did you mean 'credentials.\(suggestion)'?"
                } else {
                    message += credentials.isEmpty ? " (the site declares no credentials)" : " (declared: \(credentials.joined(separator: ", ")))"
                }
                return message
            case "site":
                if Self.siteVariables.contains(parts[1]) { return nil }
                return "'{{ \(variable) }}': unknown site variable (site.base_url and site.name exist)"
            case "env":
                if allowEnv.contains(parts[1]) { return nil }
                return "'{{ \(variable) }}': '\(parts[1])' is not listed under allow_env"
            default:
                return "'{{ \(variable) }}': unknown variable (dotted names start with credentials., site. or env.)"
            }
        }
        if extracted.contains(variable) || open { return nil }
        var message = "'{{ \(variable) }}': no earlier step extracts '\(variable)'"
        if let suggestion = Spelling.closest(to: variable, among: Array(extracted).sorted())
            ?? extracted.sorted().first(where: { variable.hasPrefix($0) || $0.hasPrefix(variable) })
        {
            message += "; did you mean '\(suggestion)'?"
        } else if let suggestion = Spelling.closest(to: variable, among: credentials) {
            message += "; did you mean 'credentials.\(suggestion)'?"
        }
        return message
    }
}

extension SiteBuilder {
    /// Records a template's use of `variable` that `scope` does not provide.
    mutating func checkVariable(_ variable: String, at mark: SourceMark, key: String, scope: VariableScope) {
        if let problem = scope.problem(with: variable) {
            checker.error(mark, "\(key): \(problem)")
        }
    }
}
