import Foundation

/// An INI file as Firefox writes `profiles.ini` and `installs.ini`: `[Section]` headers and `Key=Value`
/// lines; blank lines and lines starting with `;` or `#` are skipped, as is anything before the first header.
struct INIFile: Sendable, Hashable {
    struct Section: Sendable, Hashable {
        var name: String
        /// Keys as written (Firefox's are case-sensitive: `Path`, `IsRelative`, `Default`).
        var values: [String: String]
    }

    var sections: [Section]

    init(text: String) {
        var sections: [Section] = []
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix(";") || line.hasPrefix("#") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                sections.append(Section(name: String(line.dropFirst().dropLast()), values: [:]))
                continue
            }
            guard let equals = line.firstIndex(of: "="), !sections.isEmpty else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[sections.count - 1].values[key] = value
        }
        self.sections = sections
    }
}
