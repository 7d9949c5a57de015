import Foundation

/// `notify:` (SPEC section 12): each entry checked, every problem reported with its mark.
extension ConfigBuilder {
    /// The longest a notifier's delivery may take: a notifier that needs more is not answering.
    static let maximumNotifierTimeout: Duration = .seconds(300)
    /// Headers a webhook request sets itself.
    static let reservedNotifierHeaders = ["content-length", "content-type", "host", "transfer-encoding", "connection"]
    /// Variables `answer_url` may name.
    static let answerURLVariables = ["site", "prompt"]

    mutating func buildNotify(_ marked: Marked<[Marked<ConfigFile.NotifierFile>]>?) -> [NotifierSettings] {
        guard let entries = marked?.value else { return [] }
        var built: [NotifierSettings] = []
        for (index, entry) in entries.enumerated() {
            if let notifier = buildNotifier(entry, key: "notify[\(index)]") { built.append(notifier) }
        }
        return built
    }

    private mutating func buildNotifier(_ marked: Marked<ConfigFile.NotifierFile>, key: String) -> NotifierSettings? {
        let file = marked.value
        let target: NotifierSettings.Target?
        switch (file.webhook, file.command) {
        case (let webhook?, nil):
            target = buildWebhook(webhook, file: file, key: key).map(NotifierSettings.Target.webhook)
        case (nil, let command?):
            for (value, name) in [(file.format?.mark, "format"), (file.headers?.keyMark, "headers"), (file.answerURL?.mark, "answer_url")] {
                if let value { checker.error(value, "\(key).\(name) applies to a webhook, not to a command") }
            }
            target = buildCommand(command, key: key)
        case (nil, nil):
            checker.error(marked.mark, "\(key): give a webhook (a URL) or a command (a list: the program and its arguments)")
            return nil
        case (_?, _?):
            checker.error(marked.mark, "\(key): give either a webhook or a command, not both (write two entries)")
            return nil
        }
        let events = buildEvents(file.events, key: key)
        var timeout = NotifierSettings.defaultTimeout
        if let value = checker.positiveDuration(file.timeout, key: "\(key).timeout"), let mark = file.timeout?.mark {
            if value > Self.maximumNotifierTimeout {
                checker.error(mark, "\(key).timeout: \(DurationText.format(value)) is longer than \(DurationText.format(Self.maximumNotifierTimeout))")
            } else {
                timeout = value
            }
        }
        guard let target, let events else { return nil }
        return NotifierSettings(target: target, events: events, timeout: timeout, mark: marked.mark)
    }

    private mutating func buildWebhook(_ url: Marked<String>, file: ConfigFile.NotifierFile, key: String) -> WebhookSettings? {
        let parsed = checker.absoluteURL(url, key: "\(key).webhook")
        let format = checker.choice(file.format, WebhookSettings.Format.self, key: "\(key).format") ?? .json
        if format == .ntfy, let parsed, NtfyTopic.split(parsed) == nil {
            checker.error(
                url.mark,
                "\(key).webhook: an ntfy URL ends with the topic (letters, digits, '-' and '_', at most 64), such as https://ntfy.sh/mytopic")
        }
        var headers: [NotifierHeader] = []
        for entry in file.headers?.value.entries ?? [] {
            let name = entry.key
            guard Checker.isToken(name) else {
                checker.error(entry.keyMark, "\(key).headers: '\(name)' is not a header name")
                continue
            }
            guard !Self.reservedNotifierHeaders.contains(name.lowercased()) else {
                checker.error(entry.keyMark, "\(key).headers: \(name) is set by the webhook request itself")
                continue
            }
            if headers.contains(where: { $0.name.lowercased() == name.lowercased() }) {
                checker.error(entry.keyMark, "\(key).headers: \(name) is given twice")
                continue
            }
            switch entry.value {
            case .literal(let value):
                guard !value.value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                    checker.error(value.mark, "\(key).headers.\(name): a header value is one line")
                    continue
                }
                headers.append(NotifierHeader(name: name, value: .literal(value.value)))
            case .source(let source):
                guard let env = source.value.env else {
                    checker.error(source.mark, "\(key).headers.\(name): give a value, or {env: NAME} for an environment variable")
                    continue
                }
                guard Checker.isEnvironmentName(env.value) else {
                    checker.error(env.mark, "\(key).headers.\(name).env: '\(env.value)' is not an environment variable name")
                    continue
                }
                headers.append(NotifierHeader(name: name, value: .environment(env.value)))
            }
        }
        let answerURL = file.answerURL.flatMap { buildAnswerURL($0, key: "\(key).answer_url") }
        guard let parsed else { return nil }
        return WebhookSettings(url: parsed, format: format, headers: headers, answerURL: answerURL)
    }

    private mutating func buildAnswerURL(_ value: Marked<String>, key: String) -> Template? {
        guard let template = checker.template(value, key: key) else { return nil }
        var usable = true
        for variable in template.variables where !Self.answerURLVariables.contains(variable) {
            var message = "\(key): unknown variable '\(variable)'"
            if let suggestion = Spelling.closest(to: variable, among: Self.answerURLVariables) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += " (answer_url may name \(Self.answerURLVariables.joined(separator: " and ")))"
            }
            checker.error(value.mark, message)
            usable = false
        }
        let sample = Marked(value: template.render { _ in "x" }, mark: value.mark)
        guard usable, checker.absoluteURL(sample, key: key) != nil else { return nil }
        return template
    }

    private mutating func buildCommand(_ command: Marked<[String]>, key: String) -> NotifierSettings.Target? {
        guard let program = command.value.first, !program.isEmpty else {
            checker.error(command.mark, "\(key).command: give the program and its arguments as a list, such as [notify-send, SessionKeeper]")
            return nil
        }
        // A name is looked up on PATH when the command runs; a path is taken against config.yaml's folder.
        let resolved = program.contains("/") ? checker.path(program) : program
        return .command([resolved] + command.value.dropFirst())
    }

    private mutating func buildEvents(_ marked: Marked<[Marked<String>]>?, key: String) -> [NotificationEvent]? {
        guard let marked else { return NotificationEvent.allCases }
        guard !marked.value.isEmpty else {
            checker.error(marked.mark, "\(key).events is empty; leave it out to be told of every event")
            return nil
        }
        var events: [NotificationEvent] = []
        var valid = true
        for item in marked.value {
            guard let event = checker.choice(item, NotificationEvent.self, key: "\(key).events") else {
                valid = false
                continue
            }
            if events.contains(event) {
                checker.error(item.mark, "\(key).events: \(event.rawValue) is listed twice")
                valid = false
                continue
            }
            events.append(event)
        }
        return valid ? events : nil
    }
}

/// ntfy's URLs: the server's root, then the topic (`https://ntfy.sh/mytopic`, or under a path
/// `https://example.com/ntfy/mytopic`). Publishing as JSON posts to the root with the topic in the body.
public enum NtfyTopic {
    /// The publish URL (the root, ending in `/`) and the topic of a topic URL; nil when its last path
    /// segment is not a topic name (ntfy allows letters, digits, `-` and `_`, at most 64).
    public static func split(_ url: URL) -> (root: URL, topic: String)? {
        guard url.query == nil, url.fragment == nil else { return nil }
        var path = url.path
        if path.hasSuffix("/") { path.removeLast() }
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let topic = String(path[path.index(after: slash)...])
        let allowed = topic.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_") }
        guard !topic.isEmpty, topic.count <= 64, allowed else { return nil }
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.path = String(path[...slash])
        guard let root = components?.url else { return nil }
        return (root, topic)
    }
}
