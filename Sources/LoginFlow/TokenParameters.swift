import Foundation

/// Masks what carries a code or a token by its name, whatever its value (SPEC section 3, `login -vv`): an OAuth
/// authorization `code` and `state`, `id_token`, `access_token`, a SAML `SAMLResponse` and `RelayState`, and
/// every parameter or field named `*token*`, `csrf*`, `*code*`. A flow never extracted these values, so the
/// run's ``SecretMasker`` cannot know them: they are found by the name they travel under, in a query or
/// urlencoded body (`name=value`), a JSON member (`"name": "value"`) and an HTML input (`name="…" value="…"`).
enum TokenParameters {
    /// Whether a parameter, field or member of this name carries a code or a token.
    static func isSensitive(_ name: String) -> Bool {
        let name = name.lowercased()
        if ["state", "relaystate", "samlresponse", "samlrequest", "nonce", "session_state", "ticket", "sid"].contains(name) { return true }
        return name.contains("token") || name.contains("code") || name.hasPrefix("csrf") || name.contains("xsrf")
            || name.contains("secret") || name.contains("password") || name.hasPrefix("_csrf")
    }

    /// What every name ``isSensitive(_:)`` accepts contains one of.
    private static let sensitiveParts = ["token", "code", "csrf", "xsrf", "state", "secret", "password", "ticket", "nonce", "saml", "sid"]

    /// A name as it may be written in a query, a form body, JSON or HTML.
    private static let name = #"[A-Za-z_][A-Za-z0-9_.\-\[\]]*"#

    /// `name=value` in a query, a form body, or a URL inside a header or a page (`&amp;` separated too).
    private static let pair = try! NSRegularExpression(pattern: #"(?<=^|[?&;\s"'(,]|&amp;)("# + name + #")=([^&;\s"'<>#,)]*)"#)
    /// The same pair percent-encoded, once or more, inside another parameter's value (a `next` or `return` URL
    /// holding the authorization request: `next=%2Fauthorize%3F...%26state%3DVALUE`).
    private static let encodedPair = try! NSRegularExpression(
        pattern: #"(%(?:25)*(?:26|3F))([A-Za-z0-9_.\-]+)(%(?:25)*3D)((?:(?!%(?:25)*26)[^&\s"'<>#])*)"#, options: [.caseInsensitive])
    /// `"name": "value"` in JSON.
    private static let member = try! NSRegularExpression(pattern: #""("# + name + #")"\s*:\s*"((?:[^"\\]|\\.)*)""#)
    /// An HTML input, whose name and value attributes come in either order.
    private static let input = try! NSRegularExpression(pattern: #"<input\b[^>]*>"#, options: [.caseInsensitive])
    private static let nameAttribute = try! NSRegularExpression(pattern: #"\bname\s*=\s*["']?([^"'\s>]+)"#, options: [.caseInsensitive])
    private static let valueAttribute = try! NSRegularExpression(pattern: #"(\bvalue\s*=\s*)("[^"]*"|'[^']*'|[^\s>]+)"#, options: [.caseInsensitive])

    /// `text` with the value of every sensitive parameter, member and input replaced by ``SecretMasker/mask``.
    static func mask(_ text: String) -> String {
        guard text.contains("=") || text.contains(":") else { return text }
        // The patterns cost about 0.1 s a megabyte of page (an error's whole body is masked before it is cut):
        // a text that holds none of the sensitive names' parts skips them.
        guard sensitiveParts.contains(where: { text.range(of: $0, options: .caseInsensitive) != nil }) else { return text }
        var output = text
        output = replacing(pair, in: output) { match, text in
            guard isSensitive(text(match.range(at: 1))), match.range(at: 2).length > 0 else { return nil }
            return text(match.range(at: 1)) + "=" + SecretMasker.mask
        }
        if output.contains("%") {
            output = replacing(encodedPair, in: output) { match, text in
                guard isSensitive(text(match.range(at: 2))), match.range(at: 4).length > 0 else { return nil }
                return text(match.range(at: 1)) + text(match.range(at: 2)) + text(match.range(at: 3)) + SecretMasker.mask
            }
        }
        output = replacing(member, in: output) { match, text in
            guard isSensitive(text(match.range(at: 1))), match.range(at: 2).length > 0 else { return nil }
            return "\"\(text(match.range(at: 1)))\": \"\(SecretMasker.mask)\""
        }
        output = replacing(input, in: output) { match, text in
            let tag = text(match.range)
            let range = NSRange(tag.startIndex..., in: tag)
            guard let named = nameAttribute.firstMatch(in: tag, range: range),
                let nameRange = Range(named.range(at: 1), in: tag), isSensitive(String(tag[nameRange])),
                let valued = valueAttribute.firstMatch(in: tag, range: range),
                let valueRange = Range(valued.range(at: 2), in: tag), let prefixRange = Range(valued.range(at: 1), in: tag)
            else { return nil }
            let value = tag[valueRange]
            let quote = value.first == "\"" || value.first == "'" ? String(value.first!) : "\""
            return String(tag[..<prefixRange.lowerBound]) + String(tag[prefixRange]) + quote + SecretMasker.mask + quote
                + String(tag[valueRange.upperBound...])
        }
        return output
    }

    /// `text` with each match of `regex` replaced by what `replacement` gives (nil keeps the match).
    private static func replacing(
        _ regex: NSRegularExpression, in text: String,
        _ replacement: (NSTextCheckingResult, (NSRange) -> String) -> String?
    ) -> String {
        let whole = NSRange(text.startIndex..., in: text)
        let matches = regex.matches(in: text, range: whole)
        guard !matches.isEmpty else { return text }
        let substring = { (range: NSRange) -> String in Range(range, in: text).map { String(text[$0]) } ?? "" }
        var output = ""
        var cursor = text.startIndex
        for match in matches {
            guard let range = Range(match.range, in: text), let replaced = replacement(match, substring) else { continue }
            output += text[cursor..<range.lowerBound]
            output += replaced
            cursor = range.upperBound
        }
        output += text[cursor...]
        return output
    }
}
