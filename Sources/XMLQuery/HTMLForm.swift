internal import CXML2
import Foundation

/// An HTML form as a browser would submit it without clicking a particular button: where to, how, and the
/// form data set (HTML Living Standard, "constructing the entry list").
public struct HTMLForm: Sendable, Hashable {
    /// One name/value pair of the entry list. Names may repeat (checkbox groups, multi-selects).
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The absolute URL the form submits to: `action` resolved against the document's base URL, or the
    /// page's own URL when `action` is missing or empty.
    public var action: URL
    /// `GET` or `POST` (the `method` attribute; anything else, or none, is GET as in browsers).
    public var method: String
    /// The `enctype` attribute, lower case; `application/x-www-form-urlencoded` when absent.
    public var encoding: String
    /// The successful controls in document order.
    public var fields: [Field]

    public init(action: URL, method: String, encoding: String = HTMLForm.urlEncoded, fields: [Field]) {
        self.action = action
        self.method = method
        self.encoding = encoding
        self.fields = fields
    }

    public static let urlEncoded = "application/x-www-form-urlencoded"

    /// The first value of a field, or nil.
    public func value(of name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Replaces a field's value (every field of that name collapses into one, at the first one's place),
    /// or appends it when the form has no such field: how `form:` overrides apply to `form_from`.
    public mutating func set(_ name: String, to value: String) {
        if let index = fields.firstIndex(where: { $0.name == name }) {
            fields[index].value = value
            fields = fields.enumerated().filter { $0.offset == index || $0.element.name != name }.map(\.element)
        } else {
            fields.append(Field(name: name, value: value))
        }
    }
}

extension Document {
    /// The form selected by an XPath expression (the first selected node, which must be a `<form>`), with its
    /// action resolved against `pageURL` (or the document's URL), its method, and its successful controls:
    /// inputs (hidden ones included), checked checkboxes and radio buttons, selected options, textareas.
    /// Disabled controls, controls without a name, file inputs and buttons (submit, image, reset, button)
    /// are left out.
    public func form(_ expression: String, pageURL: URL? = nil) throws(XMLQueryError) -> HTMLForm {
        try LibXML.prepare()
        guard let page = pageURL ?? url else {
            throw XMLQueryError(kind: .formNotFound, message: "no page URL to resolve the form's action against")
        }
        let context = try XPathContext(document: pointer)
        let selected = try context.evaluate(expression)
        guard let formNode = selected.nodes.first else {
            throw XMLQueryError(kind: .formNotFound, message: "'\(expression)' selects no node")
        }
        guard Node.isElement(formNode, named: "form") else {
            let name = Node.name(formNode) ?? "a non-element node"
            throw XMLQueryError(kind: .formNotFound, message: "'\(expression)' selects <\(name)>, not a <form>")
        }

        let baseURL = try documentBaseURL(page: page, context: context)
        let actionText = Node.attribute(formNode, "action")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let action: URL
        if actionText.isEmpty {
            action = page
        } else if let resolved = URL(string: actionText, relativeTo: baseURL)?.absoluteURL {
            action = resolved
        } else {
            throw XMLQueryError(kind: .formNotFound, message: "the form's action is not a valid URL")
        }
        let method = Node.attribute(formNode, "method")?.lowercased() == "post" ? "POST" : "GET"
        let encoding = Node.attribute(formNode, "enctype")?.lowercased() ?? HTMLForm.urlEncoded

        let controls = try context.evaluate("//input | //select | //textarea").nodes
        let formID = Node.attribute(formNode, "id")
        var fields: [HTMLForm.Field] = []
        for control in controls where Self.belongs(control, to: formNode, formID: formID) && !Self.isDisabled(control) {
            fields += Self.entries(of: control)
        }
        return HTMLForm(action: action, method: method, encoding: encoding, fields: fields)
    }

    /// `<base href>` resolved against the page, else the page.
    private func documentBaseURL(page: URL, context: XPathContext) throws(XMLQueryError) -> URL {
        guard kind == .html, let node = try context.evaluate("//base[@href][1]").nodes.first,
            let href = Node.attribute(node, "href"), let base = URL(string: href, relativeTo: page)?.absoluteURL
        else { return page }
        return base
    }

    /// A control's form owner: the form its `form` attribute names, else its nearest ancestor form.
    private static func belongs(_ control: xmlNodePtr, to form: xmlNodePtr, formID: String?) -> Bool {
        if let owner = Node.attribute(control, "form") { return owner == formID }
        var parent = control.pointee.parent
        while let node = parent {
            if Node.isElement(node, named: "form") { return node == form }
            parent = node.pointee.parent
        }
        return false
    }

    /// Disabled itself, or inside a disabled fieldset but not in that fieldset's first legend.
    private static func isDisabled(_ control: xmlNodePtr) -> Bool {
        if Node.hasAttribute(control, "disabled") { return true }
        var child = control
        var parent = control.pointee.parent
        while let node = parent {
            if Node.isElement(node, named: "fieldset"), Node.hasAttribute(node, "disabled") {
                let firstLegend = Node.children(node).first { Node.isElement($0, named: "legend") }
                if firstLegend != child { return true }
            }
            child = node
            parent = node.pointee.parent
        }
        return false
    }

    private static let skippedInputTypes: Set<String> = ["submit", "image", "reset", "button", "file"]

    private static func entries(of control: xmlNodePtr) -> [HTMLForm.Field] {
        guard let name = Node.attribute(control, "name"), !name.isEmpty else { return [] }
        switch Node.name(control) {
        case "input":
            let type = Node.attribute(control, "type")?.lowercased() ?? "text"
            if skippedInputTypes.contains(type) { return [] }
            if type == "checkbox" || type == "radio" {
                guard Node.hasAttribute(control, "checked") else { return [] }
                return [HTMLForm.Field(name: name, value: Node.attribute(control, "value") ?? "on")]
            }
            return [HTMLForm.Field(name: name, value: Node.attribute(control, "value") ?? "")]
        case "textarea":
            return [HTMLForm.Field(name: name, value: textareaValue(control))]
        case "select":
            return selectedOptions(of: control).map { HTMLForm.Field(name: name, value: $0) }
        default:
            return []
        }
    }

    /// The HTML parser drops one newline right after `<textarea>`; line breaks are submitted as CRLF.
    private static func textareaValue(_ control: xmlNodePtr) -> String {
        var text = stringValue(of: control)
        if text.hasPrefix("\r\n") { text.removeFirst(1) } else if text.hasPrefix("\n") { text.removeFirst() }
        let unified = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        return unified.replacingOccurrences(of: "\n", with: "\r\n")
    }

    /// The selected, enabled options; for a single-choice drop-down with nothing selected, the first enabled
    /// option (the "selectedness setting algorithm").
    private static func selectedOptions(of select: xmlNodePtr) -> [String] {
        var options: [(node: xmlNodePtr, disabled: Bool)] = []
        func collect(_ parent: xmlNodePtr, inDisabledGroup: Bool) {
            for child in Node.children(parent) {
                if Node.isElement(child, named: "option") {
                    options.append((child, inDisabledGroup || Node.hasAttribute(child, "disabled")))
                } else if Node.isElement(child, named: "optgroup") {
                    collect(child, inDisabledGroup: inDisabledGroup || Node.hasAttribute(child, "disabled"))
                } else if child.pointee.type == XML_ELEMENT_NODE {
                    // The HTML parser may wrap options in implied elements; look through them.
                    collect(child, inDisabledGroup: inDisabledGroup)
                }
            }
        }
        collect(select, inDisabledGroup: false)
        let multiple = Node.hasAttribute(select, "multiple")
        let size = Node.attribute(select, "size").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? (multiple ? 4 : 1)
        var chosen = options.filter { Node.hasAttribute($0.node, "selected") }
        if !multiple, chosen.count > 1 { chosen = [chosen.last!] }
        if chosen.isEmpty, !multiple, size <= 1, let first = options.first(where: { !$0.disabled }) {
            chosen = [first]
        }
        return chosen.filter { !$0.disabled }.map { optionValue($0.node) }
    }

    private static func optionValue(_ option: xmlNodePtr) -> String {
        if let value = Node.attribute(option, "value") { return value }
        return stringValue(of: option).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{0C}" })
            .joined(separator: " ")
    }
}

/// Small readers over libxml2 nodes (HTML element and attribute names come back lower case).
enum Node {
    static func name(_ node: xmlNodePtr) -> String? { LibXML.borrowString(node.pointee.name) }

    static func isElement(_ node: xmlNodePtr, named name: String) -> Bool {
        node.pointee.type == XML_ELEMENT_NODE && Self.name(node)?.lowercased() == name
    }

    static func attribute(_ node: xmlNodePtr, _ name: String) -> String? {
        name.withCString { text in
            text.withMemoryRebound(to: xmlChar.self, capacity: 1) { LibXML.takeString(cxml2_xmlGetProp(node, $0)) }
        }
    }

    static func hasAttribute(_ node: xmlNodePtr, _ name: String) -> Bool {
        name.withCString { text in
            text.withMemoryRebound(to: xmlChar.self, capacity: 1) { cxml2_xmlHasProp(node, $0) != nil }
        }
    }

    static func children(_ node: xmlNodePtr) -> [xmlNodePtr] {
        var result: [xmlNodePtr] = []
        var child = node.pointee.children
        while let current = child {
            result.append(current)
            child = current.pointee.next
        }
        return result
    }
}
