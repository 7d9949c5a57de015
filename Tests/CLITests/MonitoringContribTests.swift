import Foundation
import JSON
import TestSupport
import Testing

/// contrib/prometheus (alert rules over /metrics, with promtool tests) and contrib/grafana (the dashboard): the
/// rules pass `promtool check rules` and their own `promtool test rules`, the dashboard's queries parse, and every
/// metric either names is one a running daemon exports.
@Suite struct MonitoringContribTests {
    static let rules = ContribTests.contrib.appendingPathComponent("prometheus/sessionkeeper-rules.yml").path
    static let rulesTests = ContribTests.contrib.appendingPathComponent("prometheus/sessionkeeper-rules.test.yml").path
    static let dashboard = ContribTests.contrib.appendingPathComponent("grafana/sessionkeeper-dashboard.json").path
    static let promtool = "/usr/bin/promtool"

    /// The dashboard's queries, with Grafana's variables given values PromQL takes.
    static func dashboardQueries() throws -> [String] {
        let dashboard = try JSONValue.parse(String(contentsOfFile: dashboard, encoding: .utf8))
        guard case .array(let panels)? = dashboard["panels"] else { return [] }
        return panels.flatMap { panel -> [String] in
            guard case .array(let targets)? = panel["targets"] else { return [] }
            return targets.compactMap { $0["expr"]?.plainText }
        }.map {
            $0.replacingOccurrences(of: "$__rate_interval", with: "5m").replacingOccurrences(of: "$job", with: ".*")
                .replacingOccurrences(of: "$instance", with: ".*")
        }
    }

    /// The `sessionkeeper_*` metric families a text names (a histogram's `_bucket`, `_sum` and `_count` as its family).
    static func metricNames(in text: String) -> Set<String> {
        let pattern = /sessionkeeper_[a-z_]+/
        return Set(text.matches(of: pattern).map { match in
            var name = String(match.output)
            // The daemon's histograms are its `..._seconds` families.
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix("_seconds" + suffix) {
                name.removeLast(suffix.count)
            }
            return name
        })
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: promtool), "needs promtool (Debian's prometheus package)"))
    func theAlertRulesPassPromtoolAndTheirTests() async throws {
        let checked = try await runProgram(Self.promtool, ["check", "rules", Self.rules], standardError: .mergedWithOutput)
        #expect(checked.status == 0, "\(checked.outputText)")
        let tested = try await runProgram(Self.promtool, ["test", "rules", Self.rulesTests], standardError: .mergedWithOutput)
        #expect(tested.status == 0, "\(tested.outputText)")
        #expect(tested.outputText.contains("SUCCESS"))
    }

    /// Each query of the dashboard, put in a recording rule, passes `promtool check rules`: it parses as PromQL.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: promtool), "needs promtool (Debian's prometheus package)"))
    func theDashboardsQueriesParse() async throws {
        let queries = try Self.dashboardQueries()
        #expect(queries.count >= 8)
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        var file = "groups:\n  - name: dashboard\n    rules:\n"
        for (index, query) in queries.enumerated() {
            file += "      - record: dashboard_query_\(index)\n        expr: '\(query.replacingOccurrences(of: "'", with: "''"))'\n"
        }
        let path = try folder.write(file, to: "dashboard-rules.yml")
        let checked = try await runProgram(Self.promtool, ["check", "rules", path], standardError: .mergedWithOutput)
        #expect(checked.status == 0, "\(checked.outputText)\n\(file)")
    }

    /// A real daemon with the demo site (logged in) and a site whose password is wrong (needs attention, a
    /// notification delivered to a local receiver): every metric the rules and the dashboard name is in its
    /// /metrics.
    @Test func everyMetricTheRulesAndTheDashboardNameIsExported() async throws {
        let named = Self.metricNames(in: try String(contentsOfFile: Self.rules, encoding: .utf8))
            .union(Self.metricNames(in: try Self.dashboardQueries().joined(separator: "\n")))
        #expect(named.contains("sessionkeeper_site_state") && named.contains("sessionkeeper_notifications_total"))
        #expect(named.contains("sessionkeeper_egress_requests_total") && named.contains("sessionkeeper_egress_added_seconds"))
        try await LoginCLIWorld.with { world in
            let log = world.folder.path("hook.jsonl")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let receiver = try await PythonServer.start(script: NotifyCLITests.receiverScript, arguments: [log])
            do {
                try await Self.scrape(world, receiver: receiver, log: log, named: named)
            } catch {
                await receiver.stop()
                throw error
            }
            await receiver.stop()
        }
    }

    private static func scrape(_ world: LoginCLIWorld, receiver: PythonServer, log: String, named: Set<String>) async throws {
        try """
            state_dir: state
            vault: {key: {file: state/master.key}}
            socket: {path: state/sk.sock}
            metrics: true
            notify:
              - webhook: \(receiver.url("/hook"))
            """.write(toFile: world.configPath, atomically: true, encoding: .utf8)
        let daemon = try await RunCLITests.startDaemon(world, environment: ["WRONG_PASSWORD": "wrong-password-for-the-test"])
        #expect(await RunCLITests.eventually { !RunCLITests.read(log).isEmpty }, "daemon log: \(daemon.outputText)")
        let socket = world.folder.path("state/sk.sock")
        // The egress families appear with the first request a client sends through the daemon.
        let proxiedStatus = { @Sendable () async throws -> String in
            try await runProgram("/usr/bin/curl", [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", socket, "http://localhost/v1/sites/demo/proxy/api/me",
            ]).outputText
        }
        var proxied = ""
        for _ in 0..<100 where proxied != "200" {
            proxied = try await proxiedStatus()
            if proxied != "200" { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(proxied == "200", "a request through the egress route")
        // A session the site revoked meets the request as a 401: one login, the request replayed.
        _ = try await CheckTrustCLITests.control(world, "revoke-all")
        #expect(try await proxiedStatus() == "200", "the request replayed after the login")
        var exported: Set<String> = []
        for _ in 0..<100 {
            let scrape = try await runProgram("/usr/bin/curl", ["-sf", "--unix-socket", socket, "http://localhost/metrics"])
            exported = metricNames(in: scrape.outputText)
            if named.isSubset(of: exported) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(named.subtracting(exported).isEmpty, "not exported: \(named.subtracting(exported).sorted())")
        #expect(await RunCLITests.stop(daemon) == 0)
    }
}
