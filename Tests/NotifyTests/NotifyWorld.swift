import CurlTransport
import Foundation
import JSON
import Locking
import Logging
import Notify
import Scheduler
import ServiceLifecycle
import SiteConfig
import TestSupport
import Testing

/// Webhook receivers (Fixtures/webhook_receiver.py, real HTTP on 127.0.0.1), the libcurl client the daemon
/// uses, and a ``NotifyService`` fed state changes by the test.
final class NotifyWorld: Sendable {
    let folder: TemporaryFolder
    let client: CurlHTTPClient
    let logs = CapturedLog()
    /// How each delivery ended, as the service reports it for the metrics.
    let outcomes = Locked<[NotificationOutcome]>([])
    private let servers = Locked<[PythonServer]>([])

    init(_ label: String = #function) throws {
        folder = try TemporaryFolder(label)
        client = try CurlHTTPClient()
    }

    func cleanUp() async {
        for server in servers.withLock({ $0 }) { await server.stop() }
        client.shutdown()
        folder.cleanUp()
    }

    var logger: Logger {
        logs.logger(label: "notify-test")
    }

    /// A receiver logging to `name`.jsonl in the folder; `options` as webhook_receiver.py takes them.
    func receiver(_ name: String, options: [String] = []) async throws -> Receiver {
        let script = try #require(Bundle.module.url(forResource: "webhook_receiver", withExtension: "py", subdirectory: "Fixtures")).path
        let log = folder.path(name + ".jsonl")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let server = try await PythonServer.start(script: script, arguments: [log] + options)
        servers.withLock { $0.append(server) }
        return Receiver(url: server.url(""), log: log)
    }

    /// Runs a service over `notifiers` in a service group while `body` feeds it; after `body` the feed ends and
    /// the group shuts down gracefully, as the daemon's does, and the service's end is awaited (at most its
    /// shutdown grace later).
    func run(
        _ notifiers: [NotifierSettings], environment: [String: String] = [:], capacity: Int = NotifyService.defaultQueueCapacity,
        retry: RetryPolicy = RetryPolicy(firstDelay: .milliseconds(100), maximumDelay: .milliseconds(400), attempts: 5),
        resendInterval: Duration = NotifyService.defaultResendInterval, shutdownGrace: Duration = .seconds(2),
        _ body: (AsyncStream<SiteStateChange>.Continuation) async throws -> Void
    ) async throws {
        let (channels, problems) = NotifyService.channels(for: notifiers, client: client, environment: environment)
        #expect(problems.isEmpty, "\(problems)")
        let (changes, feed) = AsyncStream.makeStream(of: SiteStateChange.self)
        let service = NotifyService(
            notifiers: channels, changes: changes, logger: logger, queueCapacity: capacity, retry: retry,
            resendInterval: resendInterval, shutdownGrace: shutdownGrace,
            observe: { [outcomes] outcome in outcomes.withLock { $0.append(outcome) } })
        let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
        let running = Task { try await group.run() }
        do {
            try await body(feed)
        } catch {
            feed.finish()
            await group.triggerGracefulShutdown()
            _ = await running.result
            throw error
        }
        feed.finish()
        await group.triggerGracefulShutdown()
        try await running.value
    }

    static func webhook(_ url: String, format: WebhookSettings.Format = .json, headers: [NotifierHeader] = [],
                        events: [NotificationEvent] = NotificationEvent.allCases, timeout: Duration = .seconds(10)) -> NotifierSettings {
        NotifierSettings(target: .webhook(WebhookSettings(url: URL(string: url)!, format: format, headers: headers)), events: events, timeout: timeout)
    }

    static func change(_ site: String, _ from: SiteSchedule.Phase, _ to: SiteSchedule.Phase, reason: AttentionReason? = nil, message: String? = nil) -> SiteStateChange {
        SiteStateChange(site: site, time: Date(), from: from, to: to, reason: reason, message: message)
    }
}

/// What one receiver got.
struct Receiver {
    let url: String
    let log: String

    struct Request {
        var time: Date
        var path: String
        var headers: [(String, String)]
        var body: String
        var json: JSONValue? { try? JSONValue.parse(body) }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    var requests: [Request] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let record = try? JSONValue.parse(String(line)), case .number(let time)? = record["time"],
                  case .string(let path)? = record["path"], case .string(let body)? = record["body"],
                  case .array(let headers)? = record["headers"] else { return nil }
            let pairs = headers.compactMap { pair -> (String, String)? in
                guard case .array(let items) = pair, items.count == 2, case .string(let name) = items[0], case .string(let value) = items[1] else { return nil }
                return (name, value)
            }
            return Request(time: Date(timeIntervalSince1970: Double(time) ?? 0), path: path, headers: pairs, body: body)
        }
    }

    /// Waits until at least `count` requests arrived, at most `within`; what arrived by then.
    func waitFor(_ count: Int, within: Duration = .seconds(30)) async throws -> [Request] {
        _ = try await waitUntil(within) { requests.count >= count }
        return requests
    }
}
