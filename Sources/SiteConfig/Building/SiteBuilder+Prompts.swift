import Foundation

/// `prompt` steps (SPEC section 12): a question to a person inside a login.
extension SiteBuilder {
    /// The longest `prompt.message`: it is a notification's text and a line of `status`.
    static let maximumPromptMessageLength = 500

    mutating func buildPromptStep(
        _ marked: Marked<StepFile.PromptFile>, in file: StepFile, name: String, key: String, mark: SourceMark, scope: inout VariableScope
    ) -> Step? {
        let before = checker.diagnostics.count
        for method in methods(of: file) {
            checker.error(method.mark, "\(key): a step is an HTTP request or a prompt, not both ('\(method.name)' and 'prompt')")
        }
        if let plugin = file.plugin {
            checker.error(plugin.keyMark, "\(key): a step is a plugin or a prompt, not both ('plugin' and 'prompt')")
        }
        for keyName in Self.requestKeys(of: file) + Self.pluginKeys(of: file) {
            let hint = keyName == "timeout" ? " (a prompt's own timeout goes inside it: prompt: {timeout: 15m})" : ""
            checker.error(mark, "\(key): '\(keyName)' does not apply to a prompt step\(hint)")
        }
        let prompt = marked.value
        var variable: String?
        if let given = prompt.name {
            if !Template.isValidVariableName(given.value) || given.value.contains(".") {
                checker.error(given.mark, "\(key).prompt.name: '\(given.value)' is not a variable name (a word: letters, digits, '_', '-'; such as sms_code)")
            } else if ["credentials", "site", "env"].contains(given.value) {
                checker.error(given.mark, "\(key).prompt.name: '\(given.value)' is reserved")
            } else {
                variable = given.value
            }
        } else {
            checker.error(marked.mark, "\(key).prompt needs 'name' (the variable later steps use, such as sms_code)")
        }
        var message: String?
        if let given = prompt.message {
            let text = given.value.trimmingCharacters(in: .whitespaces)
            if text.isEmpty {
                checker.error(given.mark, "\(key).prompt.message is empty; say what the person is asked")
            } else if text.contains(where: \.isNewline) {
                checker.error(given.mark, "\(key).prompt.message: keep it to one line")
            } else if text.count > Self.maximumPromptMessageLength {
                checker.error(given.mark, "\(key).prompt.message is longer than \(Self.maximumPromptMessageLength) characters")
            } else {
                message = text
            }
        } else {
            checker.error(marked.mark, "\(key).prompt needs 'message' (what the person is asked, such as \"Code sent to the phone ending 42\")")
        }
        let timeout = checker.positiveDuration(prompt.timeout, key: "\(key).prompt.timeout") ?? PromptStep.defaultTimeout
        // Later steps may use a well-named variable even when the prompt has another error: one error each.
        if let variable { scope.extracted.insert(variable) }
        guard checker.diagnostics.count == before, let variable, let message else { return nil }
        return Step(name: name, mark: mark, action: .prompt(PromptStep(name: variable, message: message, timeout: timeout)))
    }
}

extension SiteBuilder {
    /// A site that needs a person logs in `refresh.before_expiry` ahead so that the person has that long; a
    /// prompt that may wait longer lets the served session expire while it waits, which is worth a warning.
    mutating func warnAboutPromptTimeouts(_ login: Login?, refresh: RefreshPolicy) {
        guard case .steps(let steps)? = login else { return }
        for step in steps {
            guard let prompt = step.prompt, prompt.timeout > refresh.beforeExpiry else { continue }
            checker.warning(
                step.mark,
                "step '\(step.name)': the prompt waits up to \(DurationText.format(prompt.timeout)), longer than "
                    + "refresh.before_expiry (\(DurationText.format(refresh.beforeExpiry))): the session may expire while it waits; "
                    + "set before_expiry to the time a person needs")
        }
    }
}
