// SessionKeeper's side of the login benchmark: the demo site's 3-request login (GET /login, POST /login,
// GET /api/me) run by the real flow engine over the real libcurl client, CONCURRENCY logins at a time, each
// with a fresh cookie jar. Prints one line of JSON like the C and Python clients: logins, wall seconds,
// CPU seconds of this process.
//
// usage: LoginBenchmark BASE_URL LOGINS CONCURRENCY [USER PASSWORD]
//
// Environment:
//   PLACEMENT=transport  flows on the transport thread: the workers prefer it as their task executor and the
//                        engine's placement is .transportThread (the method of the issue 4 figures)
//   PLACEMENT=caller     flows on Swift's global concurrent executor (placement .caller)
//                        unset: the engine's default placement, workers without a preference
//   PROBE_MS=N           also send a small request (GET /api/me without a session, 401) every N ms while the
//                        logins run, placed like the flows, and report its latency (another site's keepalive)
import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import LoginBenchmarkSupport
import LoginFlow
import SiteConfig
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 4, let logins = Int(arguments[2]), let concurrency = Int(arguments[3]), logins > 0,
    concurrency > 0
else {
    FileHandle.standardError.write(Data("usage: LoginBenchmark BASE_URL LOGINS CONCURRENCY [USER PASSWORD]\n".utf8))
    exit(2)
}
let user = arguments.count > 4 ? arguments[4] : "alice"
let password = arguments.count > 5 ? arguments[5] : "wonderland"
let environment = ProcessInfo.processInfo.environment

let site = try demoLoginSite(baseURL: arguments[1], user: user, password: password)
let client = try CurlHTTPClient()
let engine: FlowEngine
switch environment["PLACEMENT"] {
case "transport"?:
    engine = FlowEngine(client: client, credentials: LiteralCredentials(site: site), placement: .transportThread)
case "caller"?:
    engine = FlowEngine(client: client, credentials: LiteralCredentials(site: site), placement: .caller)
case nil:
    engine = FlowEngine(client: client, credentials: LiteralCredentials(site: site))
case let other?:
    FileHandle.standardError.write(Data("PLACEMENT must be transport or caller, not \(other)\n".utf8))
    exit(2)
}
// Workers of flows placed on the transport thread prefer it themselves, as a scheduler running many flows
// would (see CurlHTTPClient.preferredTaskExecutor): their logins then never leave that thread.
let workerExecutor = engine.placement == .transportThread ? client.preferredTaskExecutor : nil
let probeInterval = environment["PROBE_MS"].flatMap(Int.init).map { Duration.milliseconds($0) }
let probeURL = URL(string: arguments[1] + "/api/me")!

/// Latencies of the probe requests, in seconds.
func probe(every interval: Duration, until done: @escaping @Sendable () -> Bool) async -> [Double] {
    var latencies: [Double] = []
    let options = TransportOptions()
    while !done() {
        let start = ContinuousClock.now
        _ = try? await client.send(HTTPRequest(url: probeURL), options: options)
        let elapsed = ContinuousClock.now - start
        latencies.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        try? await Task.sleep(for: interval)
    }
    return latencies
}

final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

let loginsDone = Flag()
let probeTask = probeInterval.map { interval in
    Task(executorPreference: workerExecutor) { await probe(every: interval, until: { loginsDone.isSet }) }
}

let cpuBefore = cpuSeconds()
let start = ContinuousClock.now
let failures = await withTaskGroup(of: Int.self) { group in
    for worker in 0..<concurrency {
        let share = logins / concurrency + (worker < logins % concurrency ? 1 : 0)
        group.addTask(executorPreference: workerExecutor) {
            var failed = 0
            for _ in 0..<share {
                do {
                    _ = try await engine.login(site, storage: CookieStorage(acceptPolicy: .always))
                } catch {
                    failed += 1
                    if failed == 1 { FileHandle.standardError.write(Data("login failed: \(error)\n".utf8)) }
                }
            }
            return failed
        }
    }
    var total = 0
    for await failed in group { total += failed }
    return total
}
let wall = ContinuousClock.now - start
let cpu = cpuSeconds() - cpuBefore
loginsDone.set()
let latencies = (await probeTask?.value ?? []).sorted()
client.shutdown()
let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
let placement = engine.placement == .transportThread ? "transport" : "caller"
var line = String(
    format: "{\"client\":\"sessionkeeper\",\"placement\":\"%@\",\"logins\":%d,\"failures\":%d,\"wall_s\":%.4f,\"cpu_s\":%.4f",
    placement, logins, failures, wallSeconds, cpu)
if !latencies.isEmpty {
    func percentile(_ p: Double) -> Double { 1000 * latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
    line += String(
        format: ",\"probes\":%d,\"probe_p50_ms\":%.2f,\"probe_p99_ms\":%.2f,\"probe_max_ms\":%.2f",
        latencies.count, percentile(0.5), percentile(0.99), 1000 * latencies[latencies.count - 1])
}
print(line + "}")
exit(failures == 0 ? 0 : 1)
