import Foundation
import JSON
import Notify
import SiteConfig
import TestSupport
import Testing

/// Notifications delivered to real receivers: webhooks over HTTP on 127.0.0.1 through libcurl, a command
/// notifier as a real process.
@Suite(.serialized) struct DeliveryTests {
    @Test func aWebhookIsToldNamingTheSiteWithItsHeadersAndRecoveredExactlyOnce() async throws {
        let world = try NotifyWorld()
        let receiver = try await world.receiver("hook")
        let token = "token-for-the-header-only"
        try await world.run(
            [NotifyWorld.webhook(receiver.url + "/hook", headers: [
                NotifierHeader(name: "Authorization", value: .environment("HOOK_TOKEN")),
                NotifierHeader(name: "X-Team", value: .literal("ops")),
            ])],
            environment: ["HOOK_TOKEN": "Bearer " + token]
        ) { feed in
            let broke = NotifyWorld.change("wiki", .refreshing, .needsAttention, reason: .credentialsRefused, message: "HTTP 401 at step 'login'")
            feed.yield(broke)
            let first = try await receiver.waitFor(1)
            let request = try #require(first.first)
            // (Told within 2 seconds of a daemon's state change: NotifyCLITests measures it end to end.)
            #expect(request.path == "/hook")
            #expect(request.header("Authorization") == "Bearer " + token && request.header("X-Team") == "ops")
            #expect(request.header("Content-Type") == "application/json")
            #expect(request.header("User-Agent")?.hasPrefix("SessionKeeper/") == true)
            #expect(request.json?["event"] == .string("needs-attention") && request.json?["site"] == .string("wiki"))
            #expect(request.json?["reason"] == .string("credentials-refused"))
            #expect(!request.body.contains(token), "the header's secret is not in the body")

            // Still failing, then a login, then valid: one recovered.
            feed.yield(NotifyWorld.change("wiki", .needsAttention, .loggingIn))
            feed.yield(NotifyWorld.change("wiki", .loggingIn, .needsAttention, reason: .credentialsRefused))
            feed.yield(NotifyWorld.change("wiki", .needsAttention, .loggingIn))
            feed.yield(NotifyWorld.change("wiki", .loggingIn, .valid))
            feed.yield(NotifyWorld.change("wiki", .valid, .refreshing))
            feed.yield(NotifyWorld.change("wiki", .refreshing, .valid))
            let both = try await receiver.waitFor(2)
            try await Task.sleep(for: .milliseconds(500))
            #expect(receiver.requests.count == 2, "\(receiver.requests.map(\.body))")
            #expect(both.last?.json?["event"] == .string("recovered") && both.last?.json?["site"] == .string("wiki"))
            #expect(both.last?.json?["incident"]?["id"] == request.json?["incident"]?["id"])
        }
        await world.cleanUp()
    }

    @Test func aNotifierThatIsDownIsRetriedWithBackoffAndDelaysNothingElse() async throws {
        let world = try NotifyWorld()
        let flaky = try await world.receiver("flaky", options: ["--answers", "503,502"])
        let hanging = try await world.receiver("hanging", options: ["--hang"])
        let healthy = try await world.receiver("healthy")
        // A port where nothing listens: connection refused, every try.
        let closed = "http://127.0.0.1:9/hook"
        try await world.run([
            NotifyWorld.webhook(hanging.url, timeout: .seconds(30)),
            NotifyWorld.webhook(closed),
            NotifyWorld.webhook(flaky.url),
            NotifyWorld.webhook(healthy.url),
        ], shutdownGrace: .milliseconds(300)) { feed in
            let started = ContinuousClock.now
            let change = NotifyWorld.change("wiki", .failed, .needsAttention, reason: .dailyCapReached)
            feed.yield(change)
            // Delivered one after the other, the healthy notifier would wait for the hanging one's 30 s timeout;
            // the bound leaves room for a loaded machine.
            let told = try await healthy.waitFor(1)
            let delay = told.first.map { $0.time.timeIntervalSince(change.time) } ?? .infinity
            #expect(delay < 10, "the healthy notifier was told \(delay) s after the change")
            #expect(ContinuousClock.now - started < .seconds(10))
            // 503, 502, then 200: three tries of the same notification, the waits 100 ms then 200 ms.
            let tries = try await flaky.waitFor(3)
            #expect(tries.count == 3)
            #expect(Set(tries.map(\.body)).count == 1, "the same notification each time")
            if tries.count == 3 {
                #expect(tries[1].time.timeIntervalSince(tries[0].time) >= 0.09)
                #expect(tries[2].time.timeIntervalSince(tries[1].time) >= 0.19)
            }
            #expect(hanging.requests.count == 1, "the hanging receiver got its request and holds it")
            let gaveUp = try await waitUntil(.seconds(30)) { world.logs.all.contains { $0.contains("giving up") && $0.contains("notify[1]") } }
            #expect(gaveUp, "\(world.logs.all)")
        }
        let lines = world.logs.all
        #expect(lines.contains { $0.contains("trying again") && $0.contains("notify[1] (json webhook to 127.0.0.1)") && $0.contains("cannot connect") })
        #expect(lines.contains { $0.contains("trying again") && $0.contains("answered 503") })
        #expect(!lines.contains { $0.contains("/hook") }, "a webhook's path is never logged")
        // What the metrics count: each notifier by its place, never its URL.
        let outcomes = Set(world.outcomes.withLock { $0 })
        #expect(outcomes.contains(NotificationOutcome(notifier: "notify[1]", event: "needs-attention", result: .failed)), "\(outcomes)")
        #expect(outcomes.contains(NotificationOutcome(notifier: "notify[2]", event: "needs-attention", result: .delivered)), "\(outcomes)")
        #expect(outcomes.contains(NotificationOutcome(notifier: "notify[3]", event: "needs-attention", result: .delivered)), "\(outcomes)")
        #expect(!outcomes.contains { $0.notifier == "notify[0]" && $0.result == .delivered })
        await world.cleanUp()
    }

    @Test func alertmanagerIsToldFiringAlertsAgainUntilTheyResolve() async throws {
        let world = try NotifyWorld()
        let alertmanager = try await world.receiver("alertmanager")
        try await world.run([NotifyWorld.webhook(alertmanager.url + "/api/v2/alerts", format: .alertmanager)], resendInterval: .milliseconds(300)) { feed in
            feed.yield(NotifyWorld.change("wiki", .failed, .needsAttention, reason: .manualSessionDied))
            let resent = try await alertmanager.waitFor(3)
            #expect(resent.count >= 3, "the firing alert is sent again while it lasts")
            for request in resent {
                #expect(request.path == "/api/v2/alerts")
                guard case .array(let alerts)? = request.json, let alert = alerts.first else {
                    Issue.record("not an array of alerts: \(request.body)")
                    continue
                }
                #expect(alert["labels"]?["alertname"] == .string("SessionKeeperNeedsAttention") && alert["endsAt"] == nil)
            }
            feed.yield(NotifyWorld.change("wiki", .needsAttention, .valid))
            _ = try await waitUntil(.seconds(30)) { alertmanager.requests.contains { $0.body.contains("endsAt") } }
            let resolvedAt = alertmanager.requests.count
            try await Task.sleep(for: .milliseconds(800))
            let after = alertmanager.requests
            #expect(after.count == resolvedAt, "nothing is re-sent once resolved")
            #expect(after.last?.json.flatMap { if case .array(let alerts) = $0 { alerts.first?["endsAt"] } else { nil } } != nil)
        }
        await world.cleanUp()
    }

    @Test func aCommandNotifierGetsTheEventOnStandardInputAndNothingOfTheDaemonsEnvironment() async throws {
        let world = try NotifyWorld()
        let script = try #require(Bundle.module.url(forResource: "notify-command", withExtension: "sh", subdirectory: "Fixtures")).path
        let out = world.folder.path("command.out")
        let notifier = NotifierSettings(target: .command(["/bin/sh", script, out]), events: [.needsAttention, .recovered])
        try await world.run([notifier], environment: ["PATH": "/usr/bin:/bin", "SECRET_ONLY_FOR_THE_DAEMON": "vault-passphrase"]) { feed in
            feed.yield(NotifyWorld.change("wiki", .failed, .needsAttention, reason: .credentialsRefused, message: "HTTP 401"))
            feed.yield(NotifyWorld.change("wiki", .needsAttention, .valid))
            _ = try await waitUntil(.seconds(30)) { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").components(separatedBy: "leaked:").count == 3 }
        }
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let events = text.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { try? JSONValue.parse(String($0)) }
        #expect(events.map { $0["event"] } == [.string("needs-attention"), .string("recovered")])
        #expect(events.first?["site"] == .string("wiki") && events.first?["message"] == .string("HTTP 401"))
        #expect(text.contains("env: needs-attention|wiki|SessionKeeper: wiki needs attention"))
        #expect(!text.contains("vault-passphrase") && text.contains("leaked: none"))
        await world.cleanUp()
    }

    @Test func aFullQueueDropsTheOldestAndSaysSoOnce() async throws {
        let world = try NotifyWorld()
        let hanging = try await world.receiver("hanging", options: ["--hang"])
        try await world.run([NotifyWorld.webhook(hanging.url, timeout: .seconds(30))], capacity: 2, shutdownGrace: .milliseconds(200)) { feed in
            for index in 0..<8 { feed.yield(NotifyWorld.change("site\(index)", .failed, .needsAttention)) }
            _ = try await hanging.waitFor(1)
            _ = try await waitUntil(.seconds(30)) { world.logs.all.contains { $0.contains("queue full") } }
        }
        let full = world.logs.all.filter { $0.contains("queue full") }
        #expect(full.count == 1, "\(full)")
        let dropped = world.outcomes.withLock { $0 }.filter { $0 == NotificationOutcome(notifier: "notify[0]", event: "needs-attention", result: .dropped) }
        // Eight changes into a queue of two behind a held delivery: each drop is counted (how many depends on when
        // the worker took its items), never more than the six beyond the queue's room.
        #expect((1...6).contains(dropped.count), "each notification dropped from the full queue is counted: \(dropped.count)")
        #expect(world.logs.all.contains { $0.contains("still queued at shutdown were dropped") })
        await world.cleanUp()
    }

    @Test func aHeaderWhoseVariableIsNotSetLeavesItsNotifierOut() throws {
        let world = try NotifyWorld()
        defer { world.client.shutdown() }
        let settings = [
            NotifyWorld.webhook("https://alerts.example.com/secret-path", headers: [NotifierHeader(name: "Authorization", value: .environment("MISSING_TOKEN"))]),
            NotifierSettings(target: .command(["true"])),
        ]
        let (channels, problems) = NotifyService.channels(for: settings, client: world.client, environment: [:])
        #expect(channels.map(\.channel.label) == ["notify[1] (command true)"])
        #expect(problems.map(\.description) == [
            "notify[0] (json webhook to alerts.example.com): header Authorization: the environment variable MISSING_TOKEN is not set",
        ])
        world.folder.cleanUp()
    }
}
