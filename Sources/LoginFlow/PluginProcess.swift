import Foundation
import Glibc

/// The blocking part of ``ProcessPluginRunner``: spawn, pump the pipes, wait, all on the calling thread.
enum PluginProcess {
    static func run(
        _ invocation: PluginInvocation, cancelled: CancellationFlag, standardErrorLine: @Sendable (String) -> Void
    ) -> Result<PluginOutput, PluginLaunchError> {
        // Writing to a pipe whose reader is gone raises SIGPIPE, which would end the daemon: block it on this
        // thread and collect any pending one after EPIPE.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previousMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previousMask)
        defer { pthread_sigmask(SIG_SETMASK, &previousMask, nil) }

        let spawned: Spawned
        switch spawn(invocation) {
        case .success(let value): spawned = value
        case .failure(let error): return .failure(error)
        }
        let output = pump(spawned, invocation: invocation, cancelled: cancelled, standardErrorLine: standardErrorLine)
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGPIPE) == 1 {
            var timeout = timespec(tv_sec: 0, tv_nsec: 0)
            _ = sigtimedwait(&pipeSignal, nil, &timeout)
        }
        return .success(output)
    }

    struct Spawned {
        var pid: pid_t
        var input: Int32
        var output: Int32
        var error: Int32
    }

    private static func spawn(_ invocation: PluginInvocation) -> Result<Spawned, PluginLaunchError> {
        func failure(_ message: String) -> Result<Spawned, PluginLaunchError> {
            .failure(PluginLaunchError(executablePath: invocation.executablePath, message: message))
        }
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        var error: [Int32] = [-1, -1]
        guard GNUExtensions.pipe2(&input) == 0 else { return failure("pipe: \(String(cString: strerror(errno)))") }
        guard GNUExtensions.pipe2(&output) == 0 else {
            closeAll(input)
            return failure("pipe: \(String(cString: strerror(errno)))")
        }
        guard GNUExtensions.pipe2(&error) == 0 else {
            closeAll(input + output)
            return failure("pipe: \(String(cString: strerror(errno)))")
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, error[1], 2)
        // Descriptors the daemon opened without O_CLOEXEC (sockets, the vault) must not reach a plugin.
        GNUExtensions.addCloseFrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // Process group 0: the child leads a new group, so the timeout can kill everything it started.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([invocation.executablePath] + invocation.arguments).map { strdup($0) }
        let envp = invocation.environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = (argv + [nil]).withUnsafeBufferPointer { arguments in
            (envp + [nil]).withUnsafeBufferPointer { environment in
                posix_spawn(
                    &pid, invocation.executablePath, &actions, &attributes,
                    UnsafeMutablePointer(mutating: arguments.baseAddress!), UnsafeMutablePointer(mutating: environment.baseAddress!))
            }
        }
        close(input[0])
        close(output[1])
        close(error[1])
        guard status == 0 else {
            closeAll([input[1], output[0], error[0]])
            return failure(String(cString: strerror(status)))
        }
        for fd in [input[1], output[0], error[0]] {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return .success(Spawned(pid: pid, input: input[1], output: output[0], error: error[0]))
    }

    private static func closeAll(_ fds: [Int32]) {
        for fd in fds where fd >= 0 { close(fd) }
    }

    private static func pump(
        _ process: Spawned, invocation: PluginInvocation, cancelled: CancellationFlag,
        standardErrorLine: @Sendable (String) -> Void
    ) -> PluginOutput {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: invocation.timeout)
        var inputFD: Int32 = process.input
        var outputFD: Int32 = process.output
        var errorFD: Int32 = process.error
        var written = 0
        let input = [UInt8](invocation.input)
        var stdout = Data()
        var truncated = false
        var lineBuffer: [UInt8] = []
        var exitStatus: Int32?
        var timedOut = false
        var terminatedAt: ContinuousClock.Instant?
        var hardKilled = false
        var drainDeadline: ContinuousClock.Instant?
        var chunk = [UInt8](repeating: 0, count: 65536)

        func closeInput() {
            if inputFD >= 0 { close(inputFD); inputFD = -1 }
        }
        func emitLines(final: Bool) {
            while let newline = lineBuffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(lineBuffer[..<newline])
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                standardErrorLine(String(decoding: line, as: UTF8.self))
                lineBuffer.removeSubrange(...newline)
            }
            while lineBuffer.count >= ProcessPluginRunner.maximumLineLength {
                standardErrorLine(String(decoding: lineBuffer.prefix(ProcessPluginRunner.maximumLineLength), as: UTF8.self))
                lineBuffer.removeFirst(ProcessPluginRunner.maximumLineLength)
            }
            if final, !lineBuffer.isEmpty {
                standardErrorLine(String(decoding: lineBuffer, as: UTF8.self))
                lineBuffer.removeAll()
            }
        }

        if input.isEmpty { closeInput() }
        while true {
            if exitStatus == nil {
                var status: Int32 = 0
                if waitpid(process.pid, &status, WNOHANG) == process.pid {
                    exitStatus = status
                    // The plugin is done: whatever it left in its group goes too, which also closes the pipes.
                    kill(-process.pid, SIGKILL)
                    closeInput()
                    drainDeadline = clock.now.advanced(by: ProcessPluginRunner.drainGrace)
                }
            }
            if exitStatus != nil, outputFD < 0, errorFD < 0 { break }
            if let drainDeadline, clock.now >= drainDeadline { break }

            let now = clock.now
            if !timedOut, now >= deadline || cancelled.isSet {
                timedOut = true
                terminatedAt = now
                kill(-process.pid, cancelled.isSet ? SIGKILL : SIGTERM)
                hardKilled = cancelled.isSet
            }
            if timedOut, !hardKilled, let terminatedAt, now >= terminatedAt.advanced(by: ProcessPluginRunner.terminationGrace) {
                kill(-process.pid, SIGKILL)
                hardKilled = true
            }

            var fds: [pollfd] = []
            if inputFD >= 0 { fds.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
            if outputFD >= 0 { fds.append(pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)) }
            if errorFD >= 0 { fds.append(pollfd(fd: errorFD, events: Int16(POLLIN), revents: 0)) }
            // Short waits keep the exit, timeout and cancellation checks above responsive.
            if fds.isEmpty {
                usleep(10_000)
                continue
            }
            let ready = poll(&fds, nfds_t(fds.count), 50)
            if ready < 0, errno != EINTR { break }
            if ready <= 0 { continue }
            for entry in fds where entry.revents != 0 {
                if entry.fd == inputFD {
                    let count = input.withUnsafeBytes { buffer in
                        write(inputFD, buffer.baseAddress!.advanced(by: written), min(buffer.count - written, 65536))
                    }
                    if count > 0 {
                        written += count
                        if written >= input.count { closeInput() }
                    } else if count < 0, errno != EAGAIN, errno != EINTR {
                        closeInput()  // EPIPE: the plugin does not read its input
                    }
                } else {
                    let isOutput = entry.fd == outputFD
                    let count = read(entry.fd, &chunk, chunk.count)
                    if count > 0 {
                        if isOutput {
                            let room = ProcessPluginRunner.maximumOutputSize - stdout.count
                            if count > room { truncated = true }
                            if room > 0 { stdout.append(contentsOf: chunk[0..<min(count, room)]) }
                        } else {
                            lineBuffer.append(contentsOf: chunk[0..<count])
                            emitLines(final: false)
                        }
                    } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                        close(entry.fd)
                        if isOutput { outputFD = -1 } else { errorFD = -1 }
                    }
                }
            }
        }
        emitLines(final: true)
        closeInput()
        if outputFD >= 0 { close(outputFD) }
        if errorFD >= 0 { close(errorFD) }
        if exitStatus == nil {
            // Left the loop through a poll error: make sure the child is gone and reaped.
            kill(-process.pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(process.pid, &status, 0) < 0, errno == EINTR {}
            exitStatus = status
        }

        let termination: PluginOutput.Termination
        let status = exitStatus ?? 0
        if timedOut {
            termination = .timedOut
        } else if status & 0x7F == 0 {
            termination = .exited((status >> 8) & 0xFF)
        } else {
            termination = .signaled(status & 0x7F)
        }
        return PluginOutput(termination: termination, standardOutput: stdout, outputTruncated: truncated)
    }
}

/// glibc functions that the Glibc module hides behind `_GNU_SOURCE`, looked up at run time (LoginFlow
/// has no C target of its own). Both exist in every glibc this project supports (2.34 and later).
enum GNUExtensions {
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    private static let pipe2Function: Pipe2? = lookup("pipe2").map { unsafeBitCast($0, to: Pipe2.self) }
    private static let addCloseFromFunction: AddCloseFrom? = lookup("posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    private static func lookup(_ symbol: String) -> UnsafeMutableRawPointer? {
        // The handle of the process itself searches every loaded library, libc included; never closed.
        dlsym(dlopen(nil, RTLD_NOW), symbol)
    }

    /// A pipe whose two ends are close-on-exec from the start, so no concurrent spawn can inherit them.
    static func pipe2(_ fds: UnsafeMutablePointer<Int32>) -> Int32 {
        if let pipe2Function { return pipe2Function(fds, O_CLOEXEC) }
        guard pipe(fds) == 0 else { return -1 }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return 0
    }

    /// Closes every descriptor from `lowest` up in the child; without it only close-on-exec ones close.
    static func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ lowest: Int32) {
        _ = addCloseFromFunction?(actions, lowest)
    }
}
