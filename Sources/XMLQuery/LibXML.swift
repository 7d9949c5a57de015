internal import CXML2
import Foundation
import Locking

/// Process-wide libxml2 setup, done once before the first call: the library is loaded (it is bound at run
/// time, so that commands which never read HTML do not load it; Sources/CXML2/shim.h says why) and initialised
/// (`xmlInitParser` is not reentrant before initialisation; everything afterwards is thread-safe for distinct
/// documents).
enum LibXML {
    /// Nil once libxml2 is loaded and initialised, else why not (the library, the package to install, the
    /// dynamic loader's reason).
    private static let unavailable: String? = {
        if let failure = cxml2_load_error() { return String(cString: failure) }
        cxml2_xmlInitParser()
        return nil
    }()

    /// Loads and initialises libxml2 once, and silences its stderr error printing on the calling thread.
    /// Every entry point of XMLQuery calls it before any other libxml2 call.
    static func prepare() throws(XMLQueryError) {
        if let unavailable {
            throw XMLQueryError(kind: .unavailable, message: unavailable)
        }
        cxml2_silence_errors()
    }

    /// Takes ownership of a libxml2-allocated string: converts it and frees it.
    static func takeString(_ pointer: UnsafeMutablePointer<xmlChar>?) -> String? {
        guard let pointer else { return nil }
        defer { cxml2_free_string(pointer) }
        return String(cString: UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self))
    }

    /// Converts a libxml2 string it still owns.
    static func borrowString(_ pointer: UnsafePointer<xmlChar>?) -> String? {
        guard let pointer else { return nil }
        return String(cString: UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self))
    }

    /// The message of a libxml2 error record, trimmed, with its position when it has one.
    static func describe(_ error: xmlError) -> String {
        var text = error.message.map { String(cString: $0) } ?? "error \(error.code)"
        text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if error.line > 0 { text += " (line \(error.line))" }
        return text
    }
}

/// Owns an XPath evaluation context bound to one document; handed back to ``XPathContextPool`` with it.
final class XPathContext {
    let pointer: xmlXPathContextPtr

    init(document: xmlDocPtr?) throws(XMLQueryError) {
        guard let pointer = XPathContextPool.take(document: document) else {
            throw XMLQueryError(kind: .xpath, message: "cannot allocate an XPath context")
        }
        self.pointer = pointer
    }

    deinit { XPathContextPool.give(pointer) }

    /// Compiles and evaluates, reporting libxml2's message for either failure.
    func evaluate(_ expression: String, relativeTo node: xmlNodePtr? = nil) throws(XMLQueryError) -> XPathObject {
        cxml2_xmlResetError(&pointer.pointee.lastError)
        if let node { pointer.pointee.node = node }
        let compiled: xmlXPathCompExprPtr
        if let known = CompiledXPathPool.take(expression) {
            compiled = known
        } else {
            let fresh: xmlXPathCompExprPtr? = expression.withCString { text in
                text.withMemoryRebound(to: xmlChar.self, capacity: 1) { cxml2_xmlXPathCtxtCompile(pointer, $0) }
            }
            guard let fresh else { throw XMLQueryError(kind: .xpath, message: lastMessage(expression, "does not compile")) }
            compiled = fresh
        }
        defer { CompiledXPathPool.give(compiled, for: expression) }
        guard let result = cxml2_xmlXPathCompiledEval(compiled, pointer), pointer.pointee.lastError.code == 0 else {
            throw XMLQueryError(kind: .xpath, message: lastMessage(expression, "cannot be evaluated"))
        }
        return XPathObject(result)
    }

    private func lastMessage(_ expression: String, _ fallback: String) -> String {
        let error = pointer.pointee.lastError
        guard error.code != 0 else { return "\(fallback): '\(expression)'" }
        // An XPath context records only the code and offset, not libxml2's text (xpath.c's table is private).
        let index = Int(error.code) - Int(XML_XPATH_EXPRESSION_OK.rawValue)
        let reason = Self.messages.indices.contains(index) ? Self.messages[index] : LibXML.describe(error)
        let offset = error.str1 != nil ? " at offset \(error.int1)" : ""
        return "\(reason)\(offset) in '\(expression)'"
    }

    /// libxml2's XPath error texts, indexed by `xmlXPathError`.
    private static let messages = [
        "Ok", "Number encoding", "Unfinished literal", "Start of literal", "Expected $ for variable reference",
        "Undefined variable", "Invalid predicate", "Invalid expression", "Missing closing curly brace",
        "Unregistered function", "Invalid operand", "Invalid type", "Invalid number of arguments",
        "Invalid context size", "Invalid context position", "Memory allocation error", "Syntax error",
        "Resource error", "Sub resource error", "Undefined namespace prefix", "Encoding error",
        "Char out of XML range", "Invalid or incomplete context", "Stack usage error", "Forbidden variable",
    ]
}

/// Owns an XPath result object.
final class XPathObject {
    let pointer: xmlXPathObjectPtr

    init(_ pointer: xmlXPathObjectPtr) { self.pointer = pointer }

    deinit { cxml2_xmlXPathFreeObject(pointer) }

    /// The selected nodes in document order; empty for non-node-set results.
    var nodes: [xmlNodePtr] {
        guard pointer.pointee.type == XPATH_NODESET, let set = pointer.pointee.nodesetval else { return [] }
        let count = Int(set.pointee.nodeNr)
        guard count > 0, let table = set.pointee.nodeTab else { return [] }
        return (0..<count).compactMap { table[$0] }
    }
}

/// Compiled XPath expressions kept for reuse, by expression text. A site's extractions repeat on every
/// run, and compiling costs about a third of evaluating a short expression on a login page.
///
/// A compiled expression is lent to one evaluation at a time (libxml2 caches function lookups inside it
/// while evaluating), so each text keeps a few idle copies. The expressions compile without namespaces,
/// variables or a dictionary, so a copy does not depend on the context it was compiled with.
enum CompiledXPathPool {
    /// Distinct expressions remembered; others are compiled for each use.
    static let expressionCapacity = 128
    /// Idle copies kept per expression (about the number of evaluations of one expression at once).
    static let copiesPerExpression = 4

    private struct Idle: @unchecked Sendable {
        var copies: [xmlXPathCompExprPtr] = []
    }

    private static let idle = Locked<[String: Idle]>([:])

    /// An idle compiled copy of `expression`, if one is kept.
    static func take(_ expression: String) -> xmlXPathCompExprPtr? {
        idle.withLock { $0[expression]?.copies.popLast() }
    }

    /// Keeps `compiled` for the next evaluation of `expression`, or frees it.
    static func give(_ compiled: xmlXPathCompExprPtr, for expression: String) {
        let kept = idle.withLock { idle in
            if idle[expression] == nil {
                guard idle.count < expressionCapacity else { return false }
                idle[expression] = Idle()
            }
            guard idle[expression]!.copies.count < copiesPerExpression else { return false }
            idle[expression]!.copies.append(compiled)
            return true
        }
        if !kept { cxml2_xmlXPathFreeCompExpr(compiled) }
    }
}

/// XPath contexts kept for reuse. `xmlXPathNewContext` builds a hash table of every XPath function for
/// each context, which costs more than evaluating a typical expression; a context handed out again is
/// first put back in the state `xmlXPathNewContext` leaves it in (document, no context node, no
/// namespaces, sizes -1, no error, counters zero). Its function table, error handler and object cache stay.
enum XPathContextPool {
    /// Idle contexts kept; more are freed (about the number of documents queried at once).
    static let capacity = 16

    private struct Idle: @unchecked Sendable {
        let pointer: xmlXPathContextPtr
    }

    private static let idle = Locked<[Idle]>([])

    /// A context for `document`: a reset idle one, or a new one (nil only when libxml2 cannot allocate).
    static func take(document: xmlDocPtr?) -> xmlXPathContextPtr? {
        guard let reused = idle.withLock({ $0.popLast() })?.pointer else { return cxml2_new_xpath_context(document) }
        reset(reused, document: document)
        return reused
    }

    /// Keeps `context` for reuse, or frees it when enough are idle. It is never touched again until reset.
    static func give(_ context: xmlXPathContextPtr) {
        let kept = idle.withLock { idle in
            guard idle.count < capacity else { return false }
            idle.append(Idle(pointer: context))
            return true
        }
        if !kept { cxml2_xmlXPathFreeContext(context) }
    }

    /// The per-evaluation state back to `xmlXPathNewContext`'s values. Nothing else changes between uses:
    /// XMLQuery registers no variables, namespaces or functions, and libxml2 restores `function` and
    /// `functionURI` after each call it makes.
    static func reset(_ context: xmlXPathContextPtr, document: xmlDocPtr?) {
        context.pointee.doc = document
        context.pointee.node = nil
        context.pointee.namespaces = nil
        context.pointee.nsNr = 0
        context.pointee.contextSize = -1
        context.pointee.proximityPosition = -1
        context.pointee.xptr = 0
        context.pointee.here = nil
        context.pointee.origin = nil
        context.pointee.function = nil
        context.pointee.functionURI = nil
        context.pointee.debugNode = nil
        context.pointee.opCount = 0
        context.pointee.depth = 0
        cxml2_xmlResetError(&context.pointee.lastError)
    }
}
