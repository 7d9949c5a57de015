internal import CXML2
import Foundation
import Locking

/// A parsed HTML or XML document that XPath expressions and form extraction run against.
///
/// Not thread-safe: use one document from one task at a time (libxml2 documents are not shared).
public final class Document {
    /// How the bytes were parsed.
    public enum Kind: String, Sendable {
        case html, xml
    }

    let pointer: xmlDocPtr
    public let kind: Kind
    /// The URL the document came from; relative URLs in it (form actions) resolve against it.
    public let url: URL?
    /// The parser context that built the document, handed back for reuse once the document is freed
    /// (the document's names live in the context's dictionary).
    private let parser: HTMLParserLease?

    private init(pointer: xmlDocPtr, kind: Kind, url: URL?, parser: HTMLParserLease? = nil) {
        self.pointer = pointer
        self.kind = kind
        self.url = url
        self.parser = parser
    }

    // Stored properties are released after this body: the document is freed before its parser is reused.
    deinit { cxml2_xmlFreeDoc(pointer) }

    /// Parses HTML the way a tolerant browser-like reader would: errors are recovered from, never printed,
    /// and the network is never touched.
    ///
    /// - Parameter encoding: the charset from the response's Content-Type, when it had one. Without it the
    ///   document's own `<meta charset>` decides, and UTF-8 when there is none (libxml2 would otherwise
    ///   assume ISO-8859-1).
    public static func html(_ data: Data, url: URL? = nil, encoding: String? = nil) throws(XMLQueryError) -> Document {
        // The bytes are read in place, not copied into an array first.
        let parsed: Result<Document, XMLQueryError> = data.withUnsafeBytes { raw in
            do throws(XMLQueryError) {
                return .success(try html(raw.assumingMemoryBound(to: UInt8.self), url: url, encoding: encoding))
            } catch {
                return .failure(error)
            }
        }
        return try parsed.get()
    }

    /// Parses HTML from a string (UTF-8).
    public static func html(_ text: String, url: URL? = nil) throws(XMLQueryError) -> Document {
        try html(Array(text.utf8), url: url, encoding: "UTF-8")
    }

    static func html(_ bytes: [UInt8], url: URL?, encoding: String?, pooled: Bool = true) throws(XMLQueryError) -> Document {
        try bytes.withUnsafeBufferPointer { buffer throws(XMLQueryError) -> Document in
            try html(buffer, url: url, encoding: encoding, pooled: pooled)
        }
    }

    /// - Parameter pooled: false parses with a context of its own (tests compare both ways).
    static func html(
        _ bytes: UnsafeBufferPointer<UInt8>, url: URL?, encoding: String?, pooled: Bool = true
    ) throws(XMLQueryError) -> Document {
        try LibXML.prepare()
        let options = Int32(HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue
            | HTML_PARSE_NONET.rawValue | HTML_PARSE_COMPACT.rawValue)
        let charset = encoding ?? (declaresCharset(bytes) ? nil : "UTF-8")
        // An empty buffer gives no document at all; an empty HTML page is still a page.
        if bytes.isEmpty {
            return try html(Array("<html></html>".utf8), url: url, encoding: encoding, pooled: pooled)
        }
        let lease = pooled ? HTMLParserPool.take() : nil
        let document = try parse(bytes, url: url, kind: .html, parser: lease) { buffer, length in
            withOptionalCString(charset) { charsetText in
                // A reused context reads exactly as a new one (htmlReadMemory builds and frees one per call,
                // whose dictionary allocation alone costs more than the reset).
                if let lease { return cxml2_htmlCtxtReadMemory(lease.context, buffer, length, nil, charsetText, options) }
                return cxml2_htmlReadMemory(buffer, length, nil, charsetText, options)
            }
        }
        return document
    }

    /// Parses well-formed XML. External entities and DTDs are never loaded (no network, no files).
    public static func xml(_ data: Data, url: URL? = nil) throws(XMLQueryError) -> Document {
        try xml(Array(data), url: url)
    }

    static func xml(_ bytes: [UInt8], url: URL? = nil) throws(XMLQueryError) -> Document {
        try LibXML.prepare()
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
            | XML_PARSE_COMPACT.rawValue)
        cxml2_xmlResetLastError()
        return try bytes.withUnsafeBufferPointer { bytes throws(XMLQueryError) -> Document in
            try parse(bytes, url: url, kind: .xml) { buffer, length in
                cxml2_xmlReadMemory(buffer, length, nil, nil, options)
            }
        }
    }

    private static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, url: URL?, kind: Kind, parser: HTMLParserLease? = nil,
        _ read: (UnsafePointer<CChar>, Int32) -> xmlDocPtr?
    ) throws(XMLQueryError) -> Document {
        guard bytes.count < Int(Int32.max) else {
            throw XMLQueryError(kind: .tooLarge, message: "\(bytes.count) bytes is more than libxml2 parses at once")
        }
        // libxml2 is not given the URL: nothing here reads the document's own base (forms resolve against
        // `url` in Swift), and libxml2 would re-escape and copy it for every page.
        let result: xmlDocPtr? = bytes.withMemoryRebound(to: CChar.self) { chars in
            read(chars.baseAddress!, Int32(chars.count))
        }
        guard let result else {
            let message = cxml2_xmlGetLastError().map { LibXML.describe($0.pointee) } ?? "libxml2 returned no document"
            throw XMLQueryError(kind: .parse, message: message)
        }
        return Document(pointer: result, kind: kind, url: url, parser: parser)
    }

    /// True when the first KiB declares a charset (a `<meta charset>` or `http-equiv` Content-Type), the
    /// window HTML's encoding sniffing looks at.
    private static func declaresCharset(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let head = String(decoding: bytes.prefix(1024), as: UTF8.self).lowercased()
        return head.contains("charset=") || head.contains("charset =") || head.hasPrefix("<?xml")
    }

    /// Evaluates an XPath expression against the whole document.
    public func evaluate(_ expression: String) throws(XMLQueryError) -> XPathValue {
        try LibXML.prepare()
        let context = try XPathContext(document: pointer)
        let object = try context.evaluate(expression)
        return Self.value(of: object)
    }

    /// Every string the expression yields (see ``XPathValue/strings``).
    public func strings(_ expression: String) throws(XMLQueryError) -> [String] {
        try evaluate(expression).strings
    }

    /// The first string the expression yields, or nil when it selects nothing.
    public func firstString(_ expression: String) throws(XMLQueryError) -> String? {
        try evaluate(expression).first
    }

    static func value(of object: XPathObject) -> XPathValue {
        let raw = object.pointer.pointee
        switch raw.type {
        case XPATH_NODESET: return .nodes(object.nodes.map(stringValue(of:)))
        case XPATH_BOOLEAN: return .boolean(raw.boolval != 0)
        case XPATH_NUMBER: return .number(raw.floatval)
        case XPATH_STRING: return .string(LibXML.borrowString(raw.stringval) ?? "")
        default: return .string(LibXML.takeString(cxml2_xmlXPathCastToString(object.pointer)) ?? "")
        }
    }

    /// A node's XPath string value: an attribute's value, an element's text content.
    static func stringValue(of node: xmlNodePtr) -> String {
        LibXML.takeString(cxml2_xmlXPathCastNodeToString(node)) ?? ""
    }
}

func withOptionalCString<Result>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}

/// One HTML parser context lent to one document at a time; back to ``HTMLParserPool`` when released.
final class HTMLParserLease: @unchecked Sendable {
    let context: htmlParserCtxtPtr
    /// Documents parsed with this context so far.
    let uses: Int

    init(context: htmlParserCtxtPtr, uses: Int) {
        self.context = context
        self.uses = uses
    }

    deinit { HTMLParserPool.give(context, uses: uses) }
}

/// HTML parser contexts kept for reuse (`htmlCtxtReadMemory` resets one as `htmlReadMemory` would build it).
///
/// A context is lent to one document and comes back only after that document is freed, so the
/// dictionary a context shares with its documents is never used from two threads at once. A context is
/// retired after ``maxUses`` documents, since its dictionary keeps every element and attribute name seen.
enum HTMLParserPool {
    /// Idle contexts kept (about the number of pages parsed at once).
    static let capacity = 16
    /// Documents one context parses before it is freed.
    static let maxUses = 256

    private struct Idle: @unchecked Sendable {
        let context: htmlParserCtxtPtr
        let uses: Int
    }

    private static let idle = Locked<[Idle]>([])

    /// A context for the next document, or nil when libxml2 cannot allocate one (then parse without).
    static func take() -> HTMLParserLease? {
        if let reused = idle.withLock({ $0.popLast() }) { return HTMLParserLease(context: reused.context, uses: reused.uses + 1) }
        guard let context = cxml2_htmlNewParserCtxt() else { return nil }
        return HTMLParserLease(context: context, uses: 1)
    }

    static func give(_ context: htmlParserCtxtPtr, uses: Int) {
        let kept = uses < maxUses && idle.withLock { idle in
            guard idle.count < capacity else { return false }
            idle.append(Idle(context: context, uses: uses))
            return true
        }
        if !kept { cxml2_htmlFreeParserCtxt(context) }
    }
}
