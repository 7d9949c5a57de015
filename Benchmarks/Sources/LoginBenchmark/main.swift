// SessionKeeper's side of the login benchmark: the demo site's 3-request login (GET /login, POST /login,
// GET /api/me) run by the real flow engine over the real libcurl client, CONCURRENCY logins at a time, each
// with a fresh cookie jar. Prints one line of JSON like the C and Python clients: logins, wall seconds,
// CPU seconds of this process.
//
// usage: LoginBenchmark BASE_URL LOGINS CONCURRENCY [USER PASSWORD]
//
// The workers prefer the transport thread as their task executor; with SK_GLOBAL_EXECUTOR=1 in the
// environment they run on Swift's global executor instead, and each login hops to that thread and back.
import CookieJar
import CurlTransport
import Foundation
import LoginBenchmarkSupport
import LoginFlow
import SiteConfig

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

let site = try demoLoginSite(baseURL: arguments[1], user: user, password: password)
let client = try CurlHTTPClient()
let engine = FlowEngine(client: client, credentials: LiteralCredentials(site: site))

let cpuBefore = cpuSeconds()
let start = ContinuousClock.now
let failures = await withTaskGroup(of: Int.self) { group in
    for worker in 0..<concurrency {
        let share = logins / concurrency + (worker < logins % concurrency ? 1 : 0)
        // Each worker prefers the transport thread, as a caller running many flows should (see
        // CurlHTTPClient.preferredTaskExecutor): its logins then never leave that thread.
        group.addTask(executorPreference: getenv("SK_GLOBAL_EXECUTOR") == nil ? client.preferredTaskExecutor : nil) {
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
client.shutdown()
let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
print(String(format: "{\"client\":\"sessionkeeper\",\"logins\":%d,\"failures\":%d,\"wall_s\":%.4f,\"cpu_s\":%.4f}", logins, failures, wallSeconds, cpu))
exit(failures == 0 ? 0 : 1)
