import Foundation
import HTTPTransport
import JSON
import XMLQuery

/// The site's own words on a page that failed a step, found the way a person reads a refused form: on an HTML
/// page the first element marked as an error or alert (`role="alert"`, `aria-live`, a class containing `error`,
/// `errorlist`, `alert`, `invalid`, `flash`, `notice` or `message`) that holds text, or the `<title>` when none
/// does; in a JSON body `error`, `message`, `detail` or the first of `errors`. Text only, as found: the caller
/// masks it, then collapses its whitespace (``collapse(_:)``) and masks again, as for the body's excerpt.
/// Only failures look for it: the parse costs nothing on a login that works.
enum AppMessage {
    enum Source: Sendable, Hashable {
        /// An element marked as an error, or a JSON body's message.
        case message
        /// Only the page's title was there.
        case title
    }

    /// The class words that mark an element as the app's message (matched as substrings, case-insensitive, so
    /// `errorlist`, `has-error`, `alert-danger` and `flash-messages` count).
    static let classWords = ["error", "alert", "invalid", "flash", "notice", "message"]

    /// Elements in the page's body marked as errors that hold text, in document order; never a script or style.
    static let errorElements: String = {
        let lowerClass = "translate(@class,'ABCDEFGHIJKLMNOPQRSTUVWXYZ','abcdefghijklmnopqrstuvwxyz')"
        let marks = ["@role='alert'", "@aria-live"] + classWords.map { "contains(\(lowerClass),'\($0)')" }
        return "//body//*[not(self::script or self::style or self::template or self::noscript)]"
            + "[\(marks.joined(separator: " or "))][normalize-space()]"
    }()

    /// The message of `response`'s body, or nil when it has none (not HTML or JSON, or nothing marked).
    static func find(in response: HTTPResponse) -> (text: String, source: Source)? {
        guard !response.body.isEmpty else { return nil }
        let contentType = response.headers["Content-Type"]?.lowercased() ?? ""
        let first = response.body.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }
        if contentType.contains("json") || (!contentType.contains("html") && (first == UInt8(ascii: "{"))) {
            return json(response).map { ($0, .message) }
        }
        guard contentType.contains("html") || (contentType.isEmpty && first == UInt8(ascii: "<")) else { return nil }
        return html(response)
    }

    private static func html(_ response: HTTPResponse) -> (text: String, source: Source)? {
        guard let document = try? ResponseInspection.parse(response) else { return nil }
        for text in (try? document.strings(errorElements)) ?? [] {
            if !collapse(text).isEmpty { return (text, .message) }
        }
        if let title = try? document.firstString("normalize-space(//title)"), !title.isEmpty { return (title, .title) }
        return nil
    }

    private static func json(_ response: HTTPResponse) -> String? {
        guard let value = try? JSONValue.parse(Array(response.body)) else { return nil }
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let text)?: return text.isEmpty ? nil : text
            case .object?: return text(value?["message"]) ?? text(value?["detail"]) ?? text(value?["error"])
            default: return nil
            }
        }
        var firstError: JSONValue?
        if case .array(let errors)? = value["errors"] { firstError = errors.first }
        return text(value["error"]) ?? text(value["message"]) ?? text(value["detail"]) ?? text(firstError)
    }

    /// Whitespace runs as one space, none at the ends.
    static func collapse(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
