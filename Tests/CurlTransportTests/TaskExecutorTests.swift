@testable import CurlTransport
import Foundation
import HTTPTransport
import Synchronization
import Testing

/// The transport thread as a task executor: tasks that prefer it run there before and after each request,
/// many of them share it, and none is stranded by a shutdown.
@Suite("CurlHTTPClient as a task executor")
struct TaskExecutorTests {
    let fast = TransportOptions(timeout: .seconds(10))

    /// The kernel's name for the thread the caller runs on.
    static func currentThreadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a task preferring the transport thread runs there before and after every request")
    func staysOnTheTransportThread() async throws {
        let server = try await FixtureServer.start()
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let url = server.url("/echo")
        let options = fast
        let threads = try await Task(executorPreference: client.preferredTaskExecutor) {
            var names = [Self.currentThreadName()]
            for _ in 0..<5 {
                let response = try await client.send(HTTPRequest(url: url), options: options)
                #expect(response.status == 200)
                names.append(Self.currentThreadName())
            }
            return names
        }.value
        await server.stop()
        #expect(threads.count == 6)
        #expect(threads.allSatisfy { $0 == "sk-transport" }, "ran on \(Set(threads))")
    }

    @Test("requests sent from the transport thread itself need no wakeup of that thread")
    func noWakeupFromTheThreadItself() async throws {
        let server = try await FixtureServer.start()
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let url = server.url("/echo")
        let options = fast
        let before = client.queueWakeups
        try await Task(executorPreference: client.preferredTaskExecutor) {
            for _ in 0..<20 { _ = try await client.send(HTTPRequest(url: url), options: options) }
        }.value
        let wakeups = client.queueWakeups - before
        await server.stop()
        // Starting the task on the thread may wake it once; the 20 requests and their resumptions do not.
        #expect(wakeups <= 2, "\(wakeups) wakeups for 20 requests")
    }

    @Test("without the preference a task runs on Swift's pool, not on the transport thread")
    func plainTasksStayOffTheTransportThread() async throws {
        let server = try await FixtureServer.start()
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let url = server.url("/echo")
        let options = fast
        let name = try await Task.detached {
            _ = try await client.send(HTTPRequest(url: url), options: options)
            return Self.currentThreadName()
        }.value
        await server.stop()
        #expect(name != "sk-transport")
    }

    @Test("200 tasks preferring the transport thread each get their own response")
    func manyTasksShareTheThread() async throws {
        let server = try await FixtureServer.start()
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let port = server.port
        let options = fast
        let paths = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<200 {
                group.addTask(executorPreference: client.preferredTaskExecutor) {
                    let url = URL(string: "http://127.0.0.1:\(port)/echo?n=\(index)")!
                    let response = try await client.send(HTTPRequest(url: url), options: options)
                    #expect(response.status == 200)
                    #expect(Self.currentThreadName() == "sk-transport")
                    return try Echo(response).path
                }
            }
            var collected: [String] = []
            for try await path in group { collected.append(path) }
            return collected
        }
        await server.stop()
        #expect(paths.count == 200)
        #expect(Set(paths).count == 200, "each response answered its own request")
    }

    @Test("after shutdown, tasks preferring the transport thread still finish (on the global executor)")
    func shutdownStrandsNoTask() async throws {
        let server = try await FixtureServer.start()
        let client = try CurlHTTPClient()
        let slow = server.url("/slow?delay=10")
        let fastURL = server.url("/echo")
        let options = fast
        let running = Task(executorPreference: client.preferredTaskExecutor) { () async -> String in
            do {
                _ = try await client.send(HTTPRequest(url: slow), options: options)
                return "answered"
            } catch {
                // Resumed after the shutdown: this code runs, wherever it runs.
                return (error as? TransportError)?.message ?? "\(error)"
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        client.shutdown()
        #expect(await running.value.contains("shut down"))
        let later = await Task(executorPreference: client.preferredTaskExecutor) { () async -> String in
            do {
                _ = try await client.send(HTTPRequest(url: fastURL), options: options)
                return "answered"
            } catch {
                return (error as? TransportError)?.message ?? "\(error)"
            }
        }.value
        await server.stop()
        #expect(later.contains("shut down"))
    }
}
