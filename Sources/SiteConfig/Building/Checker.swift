import Foundation
import JSON
internal import XMLQuery

/// Shared checks and conversions of the builders; collects every problem instead of stopping.
struct Checker {
    private(set) var diagnostics: [ConfigDiagnostic] = []
    /// What is reported without refusing the file.
    private(set) var warnings: [ConfigDiagnostic] = []
    /// Folder of the file being built; relative paths resolve against it.
    let directory: String
    /// For `~` in paths.
    let homeDirectory: String?

    init(file: String, environment: [String: String]) {
        directory = (file as NSString).deletingLastPathComponent
        homeDirectory = environment["HOME"]
    }

    mutating func error(_ mark: SourceMark, _ message: String) {
        diagnostics.append(ConfigDiagnostic(mark, message))
    }

    mutating func warning(_ mark: SourceMark, _ message: String) {
        warnings.append(ConfigDiagnostic(mark, message, severity: .warning))
    }

    mutating func absorb(_ more: [ConfigDiagnostic]) {
        diagnostics.append(contentsOf: more)
    }

    // MARK: Values

    mutating func duration(_ value: Marked<String>?, key: String) -> Duration? {
        guard let value else { return nil }
        guard let duration = DurationText.parse(value.value) else {
            error(value.mark, "\(key): '\(value.value)' is not a duration; write a number and a unit: 500ms, 30s, 10m, 12h, 7d")
            return nil
        }
        return duration
    }

    mutating func positiveDuration(_ value: Marked<String>?, key: String) -> Duration? {
        guard let duration = duration(value, key: key), let value else { return nil }
        guard duration > .zero else {
            error(value.mark, "\(key) must be longer than zero")
            return nil
        }
        return duration
    }

    mutating func choice<E: RawRepresentable & CaseIterable>(_ value: Marked<String>?, _ type: E.Type, key: String) -> E?
    where E.RawValue == String {
        guard let value else { return nil }
        if let result = E(rawValue: value.value) { return result }
        let names = E.allCases.map(\.rawValue)
        var message = "\(key): unknown value '\(value.value)'"
        if let suggestion = Spelling.closest(to: value.value, among: names) {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message += " (expected one of: \(names.joined(separator: ", ")))"
        }
        error(value.mark, message)
        return nil
    }

    mutating func template(_ value: Marked<String>, key: String) -> Template? {
        do {
            return try Template(parsing: value.value)
        } catch {
            self.error(value.mark, "\(key): \(error.message)")
            return nil
        }
    }

    /// Permission bits written as octal text: `"0600"`, `"600"`, `0640`.
    mutating func mode(_ value: Marked<String>?, key: String) -> UInt16? {
        guard let value else { return nil }
        guard !value.value.isEmpty, value.value.count <= 4, let bits = UInt16(value.value, radix: 8), bits <= 0o777 else {
            error(value.mark, "\(key): '\(value.value)' is not a file mode; write octal permission bits such as \"0600\"")
            return nil
        }
        return bits
    }

    /// An absolute path: `~/x` under HOME, relative paths against the file's folder.
    func path(_ text: String) -> String {
        var expanded = text
        if text == "~" || text.hasPrefix("~/"), let home = homeDirectory {
            expanded = home + text.dropFirst()
        }
        if expanded.hasPrefix("/") { return Checker.normalize(expanded) }
        return Checker.normalize(directory + "/" + expanded)
    }

    /// Removes `.`, `..` and repeated slashes lexically. Unlike NSString.standardizingPath it does
    /// not touch the file system (no symlink resolution): the path stays the one the user wrote.
    static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    mutating func nonEmptyPath(_ value: Marked<String>?, key: String) -> String? {
        guard let value else { return nil }
        guard !value.value.trimmingCharacters(in: .whitespaces).isEmpty else {
            error(value.mark, "\(key) is empty")
            return nil
        }
        return path(value.value)
    }

    mutating func regex(_ value: Marked<String>, key: String) {
        do {
            _ = try NSRegularExpression(pattern: value.value)
        } catch {
            self.error(value.mark, "\(key): invalid regular expression '\(value.value)'")
        }
    }

    mutating func xpath(_ value: Marked<String>, key: String) {
        if value.value.trimmingCharacters(in: .whitespaces).isEmpty {
            error(value.mark, "\(key): empty XPath expression")
        } else if let problem = XPath.validate(value.value) {
            error(value.mark, "\(key): invalid XPath: \(problem)")
        }
    }

    /// RFC 6901: empty (the whole document) or `/`-separated tokens, `~` only as `~0` or `~1`.
    mutating func jsonPointer(_ value: Marked<String>, key: String) {
        let text = value.value
        guard text.isEmpty || text.hasPrefix("/") else {
            error(value.mark, "\(key): '\(text)' is not a JSON pointer (RFC 6901); it starts with '/', as in /user/name")
            return
        }
        let characters = Array(text)
        for (index, character) in characters.enumerated() where character == "~" {
            let next = index + 1 < characters.count ? characters[index + 1] : " "
            if next != "0" && next != "1" {
                error(value.mark, "\(key): '~' in a JSON pointer must be written ~0 ('~') or ~1 ('/')")
                return
            }
        }
    }

    /// An absolute http(s) URL with a host.
    mutating func absoluteURL(_ value: Marked<String>, key: String) -> URL? {
        guard let url = URL(string: value.value), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme), let host = url.host, !host.isEmpty
        else {
            error(value.mark, "\(key): '\(value.value)' is not an absolute http:// or https:// URL")
            return nil
        }
        guard portIsUsable(url, source: value.value, mark: value.mark, key: key) else { return nil }
        return url
    }

    /// Foundation's URL takes any digits as a port; a port libcurl cannot connect to would fail every
    /// login as "misconfigured", long after `check` passed the file.
    private mutating func portIsUsable(_ url: URL, source: String, mark: SourceMark, key: String) -> Bool {
        guard let port = url.port, !(1...65535).contains(port) else { return true }
        error(mark, "\(key): '\(source)': port \(port) is outside 1...65535")
        return false
    }

    /// A step URL: absolute http(s), or relative to `base_url`. Placeholders stand for plain text.
    mutating func stepURL(_ template: Template, mark: SourceMark, key: String, baseURL: URL?) {
        let sample = template.render { _ in "x" }
        if sample.trimmingCharacters(in: .whitespaces).isEmpty {
            error(mark, "\(key): empty URL")
            return
        }
        if sample.contains(" ") {
            error(mark, "\(key): '\(template.source)' contains a space; encode it as %20")
            return
        }
        // An absolute URL's scheme comes before any '/', '?' or '#': a relative URL may carry "://" in its query.
        if let schemeEnd = sample.range(of: "://"), !sample[..<schemeEnd.lowerBound].contains(where: { "/?#".contains($0) }) {
            let scheme = sample[..<schemeEnd.lowerBound].lowercased()
            guard let url = URL(string: sample), ["http", "https"].contains(scheme), let host = url.host, !host.isEmpty
            else {
                error(mark, "\(key): '\(template.source)' is not a valid http:// or https:// URL")
                return
            }
            _ = portIsUsable(url, source: template.source, mark: mark, key: key)
        } else if URL(string: sample, relativeTo: baseURL ?? URL(string: "http://localhost/")) == nil {
            error(mark, "\(key): '\(template.source)' is not a valid URL or path")
        }
    }

    static func isEnvironmentName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    /// An HTTP token (RFC 9110 section 5.6.2), for header names and methods.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
        }
    }

    // MARK: JSON

    /// A YAML node as a JSON template: plain scalars resolve to null, booleans and numbers.
    mutating func jsonTemplate(_ node: YAMLNode, key: String) -> JSONTemplate {
        switch node.content {
        case .scalar(let text, let style):
            if style == .plain {
                if node.isNull { return .null }
                if ["true", "True", "TRUE"].contains(text) { return .bool(true) }
                if ["false", "False", "FALSE"].contains(text) { return .bool(false) }
                if JSONValue.isNumberText(text) { return .number(text) }
            }
            do {
                return .string(try Template(parsing: text))
            } catch {
                self.error(node.mark, "\(key): \(error.message)")
                return .string(Template(literal: text))
            }
        case .sequence(let items):
            return .array(items.map { jsonTemplate($0, key: key) })
        case .mapping(let pairs):
            return .object(pairs.map { ($0.name, jsonTemplate($0.value, key: key)) })
        }
    }

    /// A YAML node as a plain JSON value.
    static func jsonValue(_ node: YAMLNode) -> JSONValue {
        switch node.content {
        case .scalar(let text, let style):
            if style == .plain {
                if node.isNull { return .null }
                if ["true", "True", "TRUE"].contains(text) { return .bool(true) }
                if ["false", "False", "FALSE"].contains(text) { return .bool(false) }
                if JSONValue.isNumberText(text) { return .number(text) }
            }
            return .string(text)
        case .sequence(let items): return .array(items.map(jsonValue))
        case .mapping(let pairs): return .object(pairs.map { ($0.name, jsonValue($0.value)) })
        }
    }
}
