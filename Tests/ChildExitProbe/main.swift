import Dispatch
import Foundation
import Locking
import NIOCore
import NIOHTTP1
import NIOPosix
import Platform
import Synchronization

// How soon the spawner sees a child's exit, in a process of its own whose cores are kept busy the ways the daemon's
// are. Built for the tests (Tests/PlatformTests/ChildExitTests.swift) and run in release by Benchmarks/run-child-exit:
//
//   child-exit-probe stress [--children N] [--parallel P] [--cpu-tasks K] [--pool-threads T] [--udsload PATH]
//       N short children (`date +%s%N`: the last thing each does is print the wall time), P at a time, while
//       K CPU-bound tasks run on Swift's cooperative pool (each yields every millisecond), T blocking work items
//       keep NIO's thread pool busy, and, with --udsload, an HTTP/1 server on a Unix socket (NIO's own pipeline,
//       on one event loop) answers that load generator's 16 keep-alive connections. Prints one JSON object:
//       the latencies from each child's printed time to the spawner's return (ms: p50, p99, max), how many
//       children ended otherwise than with status 0, and the socket's requests per second.
//   child-exit-probe blocked-pool
//       Starts `sh` that exits with 3 after 0.2 s, under a 1 s timeout, then blocks every thread of the cooperative
//       pool for 3 s. Prints how the run ended: `exit status 3`, since the program ended long before its timeout.
//   child-exit-probe blocked-pool-timeout
//       Starts `sh` that ignores SIGTERM and waits, under a 1 s timeout with 0.5 s of grace, then blocks every thread
//       of the cooperative pool for 6 s. Prints when the program was gone (seconds after its start, from /proc) and
//       how the run ended: SIGKILL comes on time although the pool is held.

struct ProbeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A flag the load's threads and tasks poll.
final class Running: Sendable {
    private let value = Atomic<Bool>(true)
    var isOn: Bool { value.load(ordering: .relaxed) }
    func stop() { value.store(false, ordering: .relaxed) }
}

func wallNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// Spins for `duration` (the CPU-bound part of the load).
func spin(for duration: Duration) {
    let end = ContinuousClock.now + duration
    var counter = 0
    while ContinuousClock.now < end { counter &+= 1 }
    withExtendedLifetime(counter) {}
}

let environment = ChildEnvironment.minimal(from: ProcessInfo.processInfo.environment)

// MARK: stress

/// The socket's part of the load: every request answered 200 with a short body, on one event loop.
final class OKHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "3")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "ok\n")))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

func stress(_ arguments: ArraySlice<String>) async throws {
    var settings = ["--children": 2000, "--parallel": 8, "--cpu-tasks": 4, "--pool-threads": 2]
    var udsload: String?
    var rest = arguments
    while let name = rest.popFirst() {
        guard let value = rest.popFirst() else { throw ProbeFailure("\(name) needs a value") }
        if name == "--udsload" {
            udsload = value
        } else if settings[name] != nil, let number = Int(value), number >= 0 {
            settings[name] = number
        } else {
            throw ProbeFailure("unknown option or bad value: \(name) \(value)")
        }
    }
    let children = settings["--children"]!, parallel = max(1, settings["--parallel"]!)
    let running = Running()

    // CPU-bound tasks on the cooperative pool.
    let cpuTasks = (0..<settings["--cpu-tasks"]!).map { _ in
        Task.detached {
            while running.isOn {
                spin(for: .milliseconds(1))
                await Task.yield()
            }
        }
    }
    // Blocking work on NIO's thread pool: each item spins 5 ms, and the pool always has more.
    let threadPool = NIOThreadPool(numberOfThreads: max(1, settings["--pool-threads"]!))
    threadPool.start()
    let blockingWork = (0..<settings["--pool-threads"]!).map { _ in
        Task.detached {
            while running.isOn { try? await threadPool.runIfActive { spin(for: .milliseconds(5)) } }
        }
    }
    // The socket under load.
    let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    var load: RunningChild?
    var server: (any Channel)?
    let socketFolder = try PrivateTemporaryFolder.create(prefix: "child-exit-probe")
    defer { try? socketFolder.remove() }
    if let udsload {
        let path = socketFolder.file("socket")
        server = try await ServerBootstrap(group: loop)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(OKHandler())
                }
            }
            .bind(unixDomainSocketPath: path).get()
        load = try await ChildProcess(
            executable: udsload, arguments: ["-u", path, "-c", "16", "-d", "3600"], environment: environment,
            timeout: .seconds(3600), outputLimit: 1 << 16, outputOverflow: .truncate
        ).start(standardError: .discarded)
    }

    let started = ContinuousClock.now
    let latencies = Locked<[Int64]>([])
    let failures = Locked<[String]>([])
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<parallel {
            let count = children / parallel + (worker < children % parallel ? 1 : 0)
            group.addTask {
                for _ in 0..<count {
                    let child = ChildProcess(
                        executable: "/bin/date", arguments: ["+%s%N"], environment: environment, timeout: .seconds(20),
                        outputLimit: 1024, outputOverflow: .truncate)
                    do {
                        let result = try await child.run()
                        let returned = wallNanoseconds()
                        let printed = String(decoding: result.standardOutput, as: UTF8.self)
                        guard result.termination == .exited(0), let exited = Int64(printed.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                            failures.withLock { $0.append("\(result.termination)") }
                            continue
                        }
                        latencies.withLock { $0.append(returned - exited) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
    }
    let elapsed = ContinuousClock.now - started
    running.stop()
    var requestsPerSecond = 0.0
    if let load {
        _ = await load.stop()
        let output = String(decoding: load.standardOutput, as: UTF8.self)
        if let result = output.split(separator: "\n").last(where: { $0.hasPrefix("RESULT") }),
            let field = result.split(separator: " ").first(where: { $0.hasPrefix("rps=") })
        {
            requestsPerSecond = Double(field.dropFirst(4)) ?? 0
        }
    }
    for task in cpuTasks { await task.value }
    for task in blockingWork { await task.value }
    try? await server?.close()
    try await threadPool.shutdownGracefully()
    try await loop.shutdownGracefully()

    let sorted = latencies.withLock { $0 }.sorted()
    func milliseconds(_ quantile: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * quantile))]) / 1e6
    }
    let failed = failures.withLock { $0 }
    let report: [String: Any] = [
        "children": sorted.count + failed.count, "failed": failed.count, "failures": Array(failed.prefix(5)),
        "p50_ms": milliseconds(0.5), "p99_ms": milliseconds(0.99), "max_ms": milliseconds(1.0),
        "seconds": Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
        "socket_rps": requestsPerSecond,
    ]
    let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
    print(String(decoding: json, as: UTF8.self))
}

// MARK: blocked-pool

/// A run started from a detached task, seen from this (non-pool) thread: `firstLine` is the program's first line of
/// standard error, once it has written it; `finished` gives how the run ended (its termination, or the error).
final class WatchedRun: Sendable {
    private let lineWritten = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let line = Locked<String?>(nil)
    private let outcome = Locked("")

    init(_ child: ChildProcess) {
        Task.detached { [self] in
            do {
                let result = try await child.run { text in
                    guard self.line.withLock({ line in
                        defer { line = line ?? text }
                        return line == nil
                    }) else { return }
                    self.lineWritten.signal()
                }
                self.outcome.withLock { $0 = "\(result.termination)" }
            } catch {
                self.outcome.withLock { $0 = "error: \(error)" }
            }
            self.ended.signal()
        }
    }

    var firstLine: String {
        lineWritten.wait()
        return line.withLock { $0 ?? "" }
    }

    var finished: String {
        ended.wait()
        return outcome.withLock { $0 }
    }
}

/// Holds every thread of the cooperative pool (one blocker more than it has threads) for `seconds`: nothing else
/// runs on the pool until they end.
@discardableResult
func blockThePool(for seconds: UInt32) -> [Task<Void, Never>] {
    (0...ProcessInfo.processInfo.activeProcessorCount).map { _ in Task.detached { usleep(seconds * 1_000_000) } }
}

func blockedPool() {
    let run = WatchedRun(ChildProcess(
        executable: "/bin/sh", arguments: ["-c", "echo started >&2; sleep 0.2; exit 3"], environment: environment,
        timeout: .seconds(1), outputLimit: 1024, outputOverflow: .truncate))
    _ = run.firstLine
    // Held for 3 s: long after the program's exit and its timeout.
    blockThePool(for: 3)
    print(run.finished)
}

func blockedPoolTimeout() {
    let begun = ContinuousClock.now
    let run = WatchedRun(ChildProcess(
        executable: "/bin/sh", arguments: ["-c", "trap '' TERM; echo $$ >&2; sleep 30"], environment: environment,
        timeout: .seconds(1), terminationGrace: .milliseconds(500), outputLimit: 1024, outputOverflow: .truncate))
    let pid = Int32(run.firstLine) ?? 0
    blockThePool(for: 6)
    // Polled on this thread (not the pool): gone once /proc has no such process or shows it a zombie.
    var gone: Duration?
    while gone == nil, ContinuousClock.now - begun < .seconds(20) {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] != "Z" {
            usleep(20_000)
        } else {
            gone = ContinuousClock.now - begun
        }
    }
    let ended = run.finished
    let seconds = gone.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? -1
    print("gone after \(String(format: "%.1f", seconds)) s; \(ended)")
}

let arguments = CommandLine.arguments.dropFirst()
do {
    switch arguments.first {
    case "stress": try await stress(arguments.dropFirst())
    case "blocked-pool": blockedPool()
    case "blocked-pool-timeout": blockedPoolTimeout()
    default: throw ProbeFailure("usage: child-exit-probe stress [options] | blocked-pool | blocked-pool-timeout")
    }
} catch {
    FileHandle.standardError.write(Data("child-exit-probe: \(error)\n".utf8))
    exit(1)
}
