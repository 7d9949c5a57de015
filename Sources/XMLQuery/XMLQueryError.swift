/// Why a document could not be parsed or queried. Messages come from libxml2 or describe the query; they
/// never quote the document's content.
public struct XMLQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The bytes could not be parsed at all (HTML parsing recovers from almost anything; XML does not).
        case parse
        /// The XPath expression did not compile or failed while evaluating.
        case xpath
        /// The XPath expression selected nothing, or not a `<form>` element, where a form was needed.
        case formNotFound
        /// The document is larger than libxml2 accepts in one call.
        case tooLarge
        /// libxml2 itself could not be loaded (it is bound on first use; the message is the loader's).
        case unavailable
    }

    public var kind: Kind
    public var message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String {
        switch kind {
        case .parse: "cannot parse document: \(message)"
        case .xpath: "XPath error: \(message)"
        case .formNotFound: "form not found: \(message)"
        case .tooLarge: "document too large: \(message)"
        case .unavailable: message
        }
    }
}
