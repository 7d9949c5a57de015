import Foundation
import JSON

/// Builds the masked ``FlowEvent/PluginTrace``s of `login -vv`: the JSON written to a plugin's stdin and
/// read from its stdout. What the protocol names as secret is replaced by `<masked>` whatever it holds
/// (credentials; cookie values; returned header values; localStorage values; the value part of each
/// `set_cookie` line), `last_response.body` is cut as a response trace's body is, and every other string
/// goes through the run's ``SecretMasker`` (which knows the credentials, so a `with` value rendered from
/// one is masked too).
enum PluginTracer {
    static func input(_ document: JSONValue, site: String, step: String, masker: SecretMasker) -> FlowEvent.PluginTrace {
        let masked = mask(document, path: [], masker: masker) { path in
            switch path.first {
            case "credentials": path.count == 2
            case "cookies": path.count == 3 && path[2] == "value"
            default: false
            }
        }
        return FlowEvent.PluginTrace(site: site, step: step, direction: .input, json: JSONWriter.write(masked, layout: .spaced))
    }

    /// The answer as read. Its own values are added to a copy of the masker first (a variable, a header), so
    /// that they are masked wherever else the answer repeats them.
    static func output(_ document: JSONValue, site: String, step: String, masker: SecretMasker) -> FlowEvent.PluginTrace {
        var masker = masker
        if case .object(let variables)? = document["vars"] { for member in variables { masker.addValue(member.value.plainText) } }
        if case .object(let headers)? = document["headers"] { for member in headers { masker.addSecret(member.value.plainText) } }
        if case .array(let cookies)? = document["cookies"] {
            for cookie in cookies { if let value = cookie["value"] { masker.addValue(value.plainText) } }
        }
        let masked = mask(document, path: [], masker: masker) { path in
            switch path.first {
            case "headers": path.count == 2
            case "cookies": path.count == 3 && path[2] == "value"
            case "origins": path.count == 5 && path[2] == "localStorage" && path[4] == "value"
            default: false
            }
        }
        return FlowEvent.PluginTrace(site: site, step: step, direction: .output, json: JSONWriter.write(masked, layout: .spaced))
    }

    /// `value` with the strings at secret paths replaced, `set_cookie` lines reduced to name and
    /// attributes, `last_response.body` cut, and every other string redacted. Array indices appear in
    /// `path` as "#".
    private static func mask(
        _ value: JSONValue, path: [String], masker: SecretMasker, isSecret: ([String]) -> Bool
    ) -> JSONValue {
        switch value {
        case .string(let text):
            if isSecret(path) { return .string(ExchangeTracer.masked) }
            if path.first == "set_cookie" && path.count == 2 {
                return .string(ExchangeTracer.maskedValue(name: "set-cookie", value: text, masker: masker))
            }
            if path == ["last_response", "body"] {
                let redacted = masker.redact(String(text.prefix(FlowEngine.traceBodyLength * 4)))
                return .string(redacted.count > FlowEngine.traceBodyLength ? String(redacted.prefix(FlowEngine.traceBodyLength)) + "…" : redacted)
            }
            return .string(masker.redact(text))
        case .array(let items):
            return .array(items.map { mask($0, path: path + ["#"], masker: masker, isSecret: isSecret) })
        case .object(let members):
            return .object(members.map { ($0.key, mask($0.value, path: path + [$0.key], masker: masker, isSecret: isSecret)) })
        case .null, .bool, .number:
            return value
        }
    }
}
