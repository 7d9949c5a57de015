import Foundation
import HTTPTransport
import JSON
import Locking
import Platform
import SiteConfig

/// What one notifier is asked to send.
public enum DeliveryItem: Sendable, Hashable {
    /// An event of an incident.
    case notification(SiteNotification)
    /// Only the end of the events in the notification's `ends`, for a notifier that re-sends firing alerts
    /// but does not list the notification's own event.
    case ended(SiteNotification)
    /// The alerts still firing, re-sent so that an Alertmanager keeps them (it resolves an alert it has not
    /// heard of for `resolve_timeout`). Only Alertmanager webhooks get these.
    case firing([SiteNotification])
}

/// How one delivery attempt went.
public enum DeliveryOutcome: Sendable, Hashable {
    case delivered
    /// Worth another try later (the receiver is down, busy, or answered 5xx, 408 or 429).
    case retry(reason: String)
    /// Another try would fail the same way (a 4xx answer, a command that cannot run): dropped.
    case failed(reason: String)
}

/// One configured notifier: sends an item once and says how it went. Implementations never log or return
/// a header value or a URL's path or query (either may hold the notifier's secret).
public protocol NotifierChannel: Sendable {
    /// For logs: the notifier's place in config.yaml and where it sends to, without secrets.
    var label: String { get }
    /// Whether it wants ``DeliveryItem/firing(_:)`` re-sends.
    var resendsFiringAlerts: Bool { get }
    func deliver(_ item: DeliveryItem) async -> DeliveryOutcome
}

/// A webhook (`notify[].webhook`): one POST per item, through the daemon's HTTP client.
public struct WebhookChannel: NotifierChannel {
    public let label: String
    public let settings: WebhookSettings
    /// The headers with their values read (environment variables resolved when the daemon started).
    let headers: [(name: String, value: String)]
    let client: any HTTPClient
    let timeout: Duration

    public var resendsFiringAlerts: Bool { settings.format == .alertmanager }

    /// - Throws: ``NotifierSetupError`` when a header names an environment variable that is not set.
    public init(
        _ settings: WebhookSettings, index: Int, timeout: Duration, client: any HTTPClient, environment: [String: String]
    ) throws(NotifierSetupError) {
        label = "notify[\(index)] (\(settings.format.rawValue) webhook to \(settings.url.host ?? "?"))"
        self.settings = settings
        self.client = client
        self.timeout = timeout
        var headers: [(name: String, value: String)] = []
        for header in settings.headers {
            switch header.value {
            case .literal(let value): headers.append((header.name, value))
            case .environment(let name):
                guard let value = environment[name], !value.isEmpty else {
                    throw NotifierSetupError(label: label, message: "header \(header.name): the environment variable \(name) is not set")
                }
                headers.append((header.name, value))
            }
        }
        self.headers = headers
    }

    /// The request for `item`; nil when this format sends nothing for it.
    func request(for item: DeliveryItem) -> HTTPRequest? {
        let body: JSONValue
        var url = settings.url
        switch (settings.format, item) {
        case (.json, .notification(let notification)):
            body = NotificationBody.event(notification, answerURL: answerURL(for: notification))
        case (.alertmanager, .notification(let notification)):
            body = NotificationBody.alertmanager([notification], generatorURL: generatorURL)
        case (.alertmanager, .ended(let notification)):
            body = NotificationBody.alertmanager([notification], firing: false, generatorURL: generatorURL)
        case (.alertmanager, .firing(let notifications)):
            guard !notifications.isEmpty else { return nil }
            body = NotificationBody.alertmanager(notifications, generatorURL: generatorURL)
        case (.ntfy, .notification(let notification)):
            guard let (root, topic) = NtfyTopic.split(settings.url) else { return nil }
            url = root
            body = NotificationBody.ntfy(notification, topic: topic, answerURL: answerURL(for: notification))
        case (.json, .firing), (.ntfy, .firing), (.json, .ended), (.ntfy, .ended):
            return nil
        }
        var fields = HTTPHeaders([("Content-Type", "application/json")])
        for header in headers { fields.add(name: header.name, value: header.value) }
        return HTTPRequest(method: "POST", url: url, headers: fields, body: Data(JSONWriter.write(body).utf8))
    }

    public func deliver(_ item: DeliveryItem) async -> DeliveryOutcome {
        guard let request = request(for: item) else { return .delivered }
        let options = TransportOptions(
            timeout: timeout, connectTimeout: min(timeout, .seconds(10)), userAgent: SessionKeeperVersion.userAgent,
            maxBodySize: 64 * 1024)
        do {
            let response = try await client.send(request, options: options)
            switch response.status {
            case 200..<300: return .delivered
            case 408, 429, 500..<600: return .retry(reason: "the receiver answered \(response.status)")
            default: return .failed(reason: "the receiver answered \(response.status)")
            }
        } catch {
            // The kind and libcurl's message, never the URL (its path may be the notifier's secret).
            let reason = error.message.isEmpty ? error.kind.summary : "\(error.kind.summary): \(error.message)"
            return error.kind == .invalidRequest ? .failed(reason: reason) : .retry(reason: reason)
        }
    }

    private func answerURL(for notification: SiteNotification) -> String? {
        settings.answerURL.map { NotificationBody.answerURL($0, for: notification) }
    }

    /// The answer page when there is one, else a URI naming the site in SessionKeeper.
    private func generatorURL(_ notification: SiteNotification) -> String {
        answerURL(for: notification)
            ?? "sessionkeeper://localhost/sites/" + (notification.site.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? "")
    }
}

/// A command (`notify[].command`), run as plugins are: no shell, a minimal environment, a timeout; the event
/// JSON on standard input, and `SESSIONKEEPER_EVENT`, `SESSIONKEEPER_SITE`, `SESSIONKEEPER_TITLE` and
/// `SESSIONKEEPER_TEXT` in its environment for commands that take arguments (`sh -c 'notify-send
/// "$SESSIONKEEPER_TITLE" "$SESSIONKEEPER_TEXT"'`).
public struct CommandChannel: NotifierChannel {
    /// A notifier prints nothing anyone reads; more than this is discarded.
    static let outputLimit = 64 * 1024
    /// The last standard error lines kept for a failure's log line.
    static let keptErrorLines = 3

    public let label: String
    let arguments: [String]
    let environment: ChildEnvironment
    let timeout: Duration

    public var resendsFiringAlerts: Bool { false }

    public init(_ arguments: [String], index: Int, timeout: Duration, environment: [String: String]) {
        label = "notify[\(index)] (command \(arguments.first ?? ""))"
        self.arguments = arguments
        self.environment = ChildEnvironment.minimal(from: environment)
        self.timeout = timeout
    }

    public func deliver(_ item: DeliveryItem) async -> DeliveryOutcome {
        guard case .notification(let notification) = item, let program = arguments.first else { return .delivered }
        var environment = environment
        environment.set("SESSIONKEEPER_EVENT", to: notification.event.rawValue)
        environment.set("SESSIONKEEPER_SITE", to: notification.site)
        environment.set("SESSIONKEEPER_TITLE", to: notification.title)
        environment.set("SESSIONKEEPER_TEXT", to: notification.text)
        let process = ChildProcess(
            executable: program, arguments: Array(arguments.dropFirst()), environment: environment,
            input: Array((JSONWriter.write(NotificationBody.event(notification)) + "\n").utf8), timeout: timeout,
            outputLimit: Self.outputLimit, outputOverflow: .truncate)
        let errorLines = ErrorLines(limit: Self.keptErrorLines)
        let result: ChildProcessResult
        do {
            result = try await process.run { errorLines.add($0) }
        } catch .launchFailed(_, let reason) {
            return .failed(reason: "cannot run \(program): \(reason)")
        } catch {
            return .retry(reason: "\(error)")
        }
        switch result.termination {
        case .exited(0): return .delivered
        case .cancelled: return .retry(reason: "stopped by the daemon's shutdown")
        default:
            let said = errorLines.text
            return .retry(reason: "\(program) \(result.termination)" + (said.isEmpty ? "" : ": \(said)"))
        }
    }
}

/// The last lines a command wrote to standard error.
private final class ErrorLines: Sendable {
    private let lines: Locked<[String]>
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
        lines = Locked([])
    }

    func add(_ line: String) {
        lines.withLock { lines in
            lines.append(String(line.prefix(200)))
            if lines.count > limit { lines.removeFirst() }
        }
    }

    var text: String { lines.withLock { $0.joined(separator: " / ") } }
}

/// A notifier that cannot be set up (a header's environment variable is missing): it is left out and the
/// daemon says so.
public struct NotifierSetupError: Error, Sendable, Hashable, CustomStringConvertible {
    public var label: String
    public var message: String

    public var description: String { "\(label): \(message)" }
}
