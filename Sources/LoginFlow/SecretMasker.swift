import Foundation

/// Replaces every known secret in text meant for people (error messages, plugin stderr, logs).
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

    private var secrets: Set<String> = []

    public init() {}

    /// Adds a value that must never appear: always masked, whatever its length.
    public mutating func addSecret(_ value: String) {
        guard !value.isEmpty else { return }
        insertVariants(of: value)
    }

    /// Adds a value that is masked when it is long enough to carry a secret.
    public mutating func addValue(_ value: String) {
        guard value.count >= Self.minimumMaskedLength else { return }
        insertVariants(of: value)
    }

    private mutating func insertVariants(of value: String) {
        secrets.insert(value)
        if let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics), encoded != value {
            secrets.insert(encoded)
        }
        let formEncoded = FormEncoding.encode(value)
        if formEncoded != value { secrets.insert(formEncoded) }
        let escaped = value.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        if escaped != value { secrets.insert(escaped) }
    }

    /// `text` with every secret replaced by ``mask``, longest secrets first so that a secret containing
    /// another is masked whole.
    public func redact(_ text: String) -> String {
        guard !secrets.isEmpty, !text.isEmpty else { return text }
        var output = text
        for secret in secrets.sorted(by: { $0.count > $1.count }) where output.contains(secret) {
            output = output.replacingOccurrences(of: secret, with: Self.mask)
        }
        return output
    }

    /// Merges another masker's secrets in.
    public mutating func formUnion(_ other: SecretMasker) { secrets.formUnion(other.secrets) }
}
