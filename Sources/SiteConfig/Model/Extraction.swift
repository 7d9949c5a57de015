/// How a step captures a variable from its last response (SPEC section 3, `extract:`).
public enum Extraction: Sendable, Hashable {
    /// The first capture group of the first match in the body (the whole match when the pattern has
    /// no group); NSRegularExpression syntax.
    case regex(String)
    /// The string value of an XPath 1.0 expression over the body parsed as HTML (or XML), libxml2.
    case xpath(String)
    /// The value at an RFC 6901 JSON Pointer in the body (`/user/name`); strings as is, other values
    /// as their JSON text.
    case json(pointer: String)
    /// A response header's value, by case-insensitive name (the first one when repeated).
    case header(String)
    /// The value of a cookie, by name, as stored after this response.
    case cookie(String)
    /// The status code as decimal text.
    case status
    /// The final URL (after redirects); with `query`, that query item's value.
    case url(query: String?)
}

/// One entry of `extract:`: the variable's name and how to fill it.
public struct NamedExtraction: Sendable, Hashable {
    /// The variable's name, used as `{{ name }}` by later steps.
    public var name: String
    /// How the value is captured.
    public var extraction: Extraction
    /// Where the entry's key is written.
    public var mark: SourceMark?

    public init(name: String, extraction: Extraction, mark: SourceMark? = nil) {
        self.name = name
        self.extraction = extraction
        self.mark = mark
    }
}
