import Foundation

/// Replaces every known secret in text meant for people (error messages, plugin stderr, logs), and every value
/// sent under the name of a code or a token.
///
/// Secrets are credential values, extracted variables, cookie values and plugin-provided header values.
/// Each is masked as written, percent-encoded (as it appears in a form body or query) and HTML-escaped
/// (as a page may echo it back). Credentials are masked whatever their length; other values from
/// ``minimumMaskedLength`` characters up, since a cookie such as `lang=en` carries no secret while
/// masking every "en" would make excerpts unreadable.
public struct SecretMasker: Sendable {
    /// Shorter cookie values and variables are left visible.
    public static let minimumMaskedLength = 4
    public static let mask = "•••"

    /// The values as added. Their encoded variants are derived in ``redact(_:)`` only: a login adds every
    /// credential and cookie value, and almost never produces a message to redact.
    private var secrets: Set<String> = []

    public init() {}

    /// Adds a value that must never appear: always masked, whatever its length.
    public mutating func addSecret(_ value: String) {
        guard !value.isEmpty else { return }
        secrets.insert(value)
    }

    /// Adds a value that is masked when it is long enough to carry a secret.
    public mutating func addValue(_ value: String) {
        // `count >= minimum` without counting every character of a long cookie value.
        guard !value.dropFirst(Self.minimumMaskedLength - 1).isEmpty else { return }
        secrets.insert(value)
    }

    /// A value as written, percent-encoded, form-encoded and HTML-escaped.
    private static func variants(of value: String) -> Set<String> {
        var variants: Set<String> = [value]
        if let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) { variants.insert(encoded) }
        variants.insert(FormEncoding.encode(value))
        variants.insert(
            value.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;"))
        return variants
    }

    /// `text` with every secret (and its encoded forms) replaced by ``mask``, longest first so that a secret
    /// containing another is masked whole.
    ///
    /// Then the values of parameters, JSON members and form inputs named as codes and tokens are masked too
    /// (``TokenParameters``): an OAuth code or a CSRF token the flow never extracted is still one.
    public func redact(_ text: String) -> String {
        guard !text.isEmpty else { return text }
        var output = text
        if !secrets.isEmpty {
            let all = secrets.reduce(into: Set<String>()) { $0.formUnion(Self.variants(of: $1)) }
            for secret in all.sorted(by: { $0.count > $1.count }) where output.contains(secret) {
                output = output.replacingOccurrences(of: secret, with: Self.mask)
            }
        }
        return TokenParameters.mask(output)
    }

    /// Merges another masker's secrets in.
    public mutating func formUnion(_ other: SecretMasker) { secrets.formUnion(other.secrets) }
}
