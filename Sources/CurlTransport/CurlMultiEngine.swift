internal import CCurl
import Foundation
import HTTPTransport
import Locking
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libcurl multi handle and the one thread that drives it, which is also a task executor.
///
/// Tasks hand transfers in through a lock-protected queue and wake the thread with `curl_multi_wakeup`; the
/// thread adds them to the multi handle, runs `curl_multi_perform`, collects finished transfers with
/// `curl_multi_info_read` and resumes their continuations, then sleeps in `curl_multi_poll`. Jobs of tasks
/// that prefer the engine as their executor come in through the same queue and run at the top of each turn,
/// so a continuation resumed by a finished transfer runs on this thread in the next turn. The multi
/// handle's connection cache keeps connections open between requests, so requests to one host reuse them.
final class CurlMultiEngine: TaskExecutor, Sendable {
    /// What submitters and the thread share, always under `state`'s lock.
    private struct SharedState {
        var incoming: [CurlTransfer] = []
        /// Transfers submitted and not yet known to be finished (ids), to tell a late cancel from an early one.
        var live: Set<UInt64> = []
        var cancelRequests: [UInt64] = []
        /// Streamed transfers whose reader took a part, or whose body's source brought one, while paused.
        var unpauseRequests: [UInt64] = []
        var finishedSinceLastSwap: [UInt64] = []
        var stopping = false
        /// The thread may be (about to be) asleep in `curl_multi_poll`: the next submitter must wake it.
        /// False while it is awake and will look at the queue anyway, which saves a wakeup per request
        /// under load.
        var threadMayBeSleeping = false
        /// Reset easy handles kept for reuse (saves `curl_easy_init` and its allocations per request).
        var idleEasyHandles: [CurlEasyHandle] = []
        /// Jobs of tasks that prefer this engine as their task executor, run on the engine thread in order.
        var jobs: [UnownedJob] = []
        var thread: pthread_t?
        var nextID: UInt64 = 1
    }

    private let multi: CurlMultiHandle
    private let state = Locked(SharedState())
    /// Wakeups sent to the engine thread by queued jobs and transfers (for tests: work queued from the
    /// thread itself must need none).
    let queueWakeups = Atomic<Int>(0)
    let configuration: CurlHTTPClient.Configuration

    /// The engine thread's name.
    static let threadName = "sk-transport"

    /// Easy handles kept for reuse; more than this many idle ones are freed.
    private static let maxIdleEasyHandles = 64

    /// How long `curl_multi_poll` may sleep while no transfer runs: an hour, because nothing but a new
    /// submission (which calls `curl_multi_wakeup`) or a stop needs the thread then; libcurl tends its
    /// connection cache on the next transfer. An idle daemon's transport thread thus never wakes by itself.
    private static let idlePollMilliseconds: Int32 = 3_600_000

    init(configuration: CurlHTTPClient.Configuration) throws(TransportError) {
        if let reason = curlUnavailableReason {
            throw TransportError(kind: .other, url: nil, message: reason)
        }
        guard let multi = CurlMultiHandle() else {
            throw TransportError(kind: .other, url: nil, message: "curl_multi_init failed (out of memory)")
        }
        self.multi = multi
        self.configuration = configuration
        _ = ccurl_multi_setopt_long(multi.raw, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        _ = ccurl_multi_setopt_long(multi.raw, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxTotalConnections)
        _ = ccurl_multi_setopt_long(multi.raw, CURLMOPT_MAXCONNECTS, configuration.idleConnectionCacheSize)
        _ = ccurl_multi_setopt_long(multi.raw, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
    }

    /// Starts the engine thread. The thread holds a strong reference to the engine until it exits.
    func start() throws(TransportError) {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            let engine = Unmanaged<CurlMultiEngine>.fromOpaque(context!).takeRetainedValue()
            // Named for `top -H`, perf and debuggers (at most 15 bytes on Linux); Foundation's setter calls
            // pthread_setname_np, which Glibc's Swift module does not export.
            Thread.current.name = CurlMultiEngine.threadName
            engine.runLoop()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<CurlMultiEngine>.fromOpaque(context).release()
            throw TransportError(kind: .other, url: nil, message: "could not start the transport thread: \(String(cString: strerror(result)))")
        }
        state.withLock { $0.thread = thread }
    }

    func makeID() -> UInt64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// An idle easy handle from the pool, preferably one already configured for `profile` (the most
    /// recently used such one), or a new one (nil only when libcurl cannot allocate).
    func makeEasyHandle(for profile: CurlHandleProfile) -> CurlEasyHandle? {
        let idle = state.withLock { state -> CurlEasyHandle? in
            if let index = state.idleEasyHandles.lastIndex(where: { $0.configuredProfile == profile }) {
                return state.idleEasyHandles.remove(at: index)
            }
            return state.idleEasyHandles.popLast()
        }
        return idle ?? CurlEasyHandle()
    }

    /// Queues `job` to run on the engine thread at the start of its next turn (SE-0417 `TaskExecutor`).
    /// After shutdown the job goes to the global concurrent executor, so no task is stranded.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (accepted, wake): (Bool, Bool) = state.withLock { state in
            if state.stopping { return (false, false) }
            state.jobs.append(job)
            defer { state.threadMayBeSleeping = false }
            return (true, state.threadMayBeSleeping)
        }
        if wake {
            queueWakeups.add(1, ordering: .relaxed)
            multi.wakeUp()
        }
        if !accepted { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    enum SubmitRefusal { case cancelled, shutDown }

    /// Queues a transfer for the engine thread; nil when queued, else why not (the caller resumes itself).
    func submit(_ transfer: CurlTransfer) -> SubmitRefusal? {
        let (refusal, wake): (SubmitRefusal?, Bool) = state.withLock { state in
            if state.stopping { return (.shutDown, false) }
            // Checked under the lock that `cancel` takes: a cancel either sees the transfer live, or
            // happened before this check and is seen here.
            if Task.isCancelled { return (.cancelled, false) }
            state.incoming.append(transfer)
            state.live.insert(transfer.id)
            defer { state.threadMayBeSleeping = false }
            return (nil, state.threadMayBeSleeping)
        }
        if wake {
            queueWakeups.add(1, ordering: .relaxed)
            multi.wakeUp()
        }
        return refusal
    }

    /// Asks the engine thread to abort a transfer; a no-op when it already finished.
    func cancel(id: UInt64) {
        let removed: CurlTransfer? = state.withLock { state in
            if let index = state.incoming.firstIndex(where: { $0.id == id }) {
                state.live.remove(id)
                return state.incoming.remove(at: index)
            }
            if state.live.contains(id) { state.cancelRequests.append(id) }
            return nil
        }
        if let removed {
            removed.abandon(Self.cancelledError(removed.url))
        } else {
            multi.wakeUp()
        }
    }

    /// Asks the engine thread to unpause a streamed transfer (`curl_easy_pause(CURLPAUSE_CONT)`); a no-op
    /// when it already finished.
    func unpause(id: UInt64) {
        let wake: Bool = state.withLock { state in
            guard state.live.contains(id), !state.stopping else { return false }
            state.unpauseRequests.append(id)
            defer { state.threadMayBeSleeping = false }
            return state.threadMayBeSleeping
        }
        if wake {
            queueWakeups.add(1, ordering: .relaxed)
            multi.wakeUp()
        }
    }

    /// Stops the thread: queued and running transfers fail with a "shut down" error. Waits for the thread to
    /// exit unless called on it. Idempotent.
    func shutdown() {
        let thread: pthread_t? = state.withLock { state in
            if state.stopping { return nil }
            state.stopping = true
            return state.thread
        }
        guard let thread else { return }
        multi.wakeUp()
        if pthread_equal(thread, pthread_self()) == 0 {
            pthread_join(thread, nil)
        } else {
            pthread_detach(thread)
        }
    }

    // MARK: The engine thread

    private func runLoop() {
        var active: [UInt64: CurlTransfer] = [:]
        var byHandle: [UnsafeMutableRawPointer: UInt64] = [:]
        var finished: [UInt64] = []

        func finish(_ id: UInt64, _ ending: (CurlTransfer) -> CurlTransfer.Ending) {
            guard let transfer = active.removeValue(forKey: id) else { return }
            byHandle.removeValue(forKey: transfer.easy.raw)
            // The conclusion reads CURLINFO before the handle leaves the multi handle.
            let result = transfer.conclude(ending(transfer))
            ccurl_multi_remove_handle(multi.raw, transfer.easy.raw)
            finished.append(id)
            recycle(transfer.easy)
            if let result { transfer.deliver(result) }
        }

        while true {
            let jobs = state.withLock { state in
                // Awake from here until the check before the next poll, which sees anything queued meanwhile:
                // a job or transfer queued during this turn (by the jobs themselves, or by a continuation this
                // thread resumes) needs no wakeup, which would cost a write and two reads of libcurl's socketpair.
                state.threadMayBeSleeping = false
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return state.jobs
            }
            for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }

            let (incoming, cancels, unpauses, stopping) = state.withLock { state in
                let batch = (state.incoming, state.cancelRequests, state.unpauseRequests, state.stopping)
                state.incoming.removeAll(keepingCapacity: true)
                state.cancelRequests.removeAll(keepingCapacity: true)
                state.unpauseRequests.removeAll(keepingCapacity: true)
                for id in finished { state.live.remove(id) }
                return batch
            }
            finished.removeAll(keepingCapacity: true)

            for transfer in incoming {
                let added = ccurl_multi_add_handle(multi.raw, transfer.easy.raw)
                if added == CURLM_OK {
                    active[transfer.id] = transfer
                    byHandle[transfer.easy.raw] = transfer.id
                } else {
                    finished.append(transfer.id)
                    let message = "curl_multi_add_handle failed: \(String(cString: ccurl_multi_strerror(added)))"
                    transfer.abandon(TransportError(kind: .other, url: transfer.url, message: message))
                }
            }
            for id in cancels {
                finish(id) { .failed(Self.cancelledError($0.url)) }
            }
            if stopping {
                for id in Array(active.keys) {
                    finish(id) { .failed(Self.shutDownError($0.url)) }
                }
                break
            }
            for id in unpauses {
                // libcurl may call the write callback from inside curl_easy_pause with the part it kept.
                guard let transfer = active[id] else { continue }
                let resumed = ccurl_easy_unpause(transfer.easy.raw)
                if resumed != CURLE_OK {
                    let message = "curl_easy_pause failed: \(String(cString: ccurl_easy_strerror(resumed)))"
                    finish(id) { .failed(TransportError(kind: .other, url: $0.url, message: message)) }
                }
            }

            var running: Int32 = 0
            let performed = ccurl_multi_perform(multi.raw, &running)
            if performed != CURLM_OK {
                let message = "curl_multi_perform failed: \(String(cString: ccurl_multi_strerror(performed)))"
                for id in Array(active.keys) {
                    finish(id) { .failed(TransportError(kind: .other, url: $0.url, message: message)) }
                }
            }
            var remaining: Int32 = 0
            while let message = ccurl_multi_info_read(multi.raw, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                    let id = byHandle[handle]
                else { continue }
                let code = message.pointee.data.result
                finish(id) { _ in .done(code) }
            }

            let mayPoll = state.withLock { state in
                guard state.incoming.isEmpty, state.cancelRequests.isEmpty, state.unpauseRequests.isEmpty,
                    state.jobs.isEmpty, !state.stopping
                else {
                    return false
                }
                state.threadMayBeSleeping = true
                return true
            }
            if mayPoll {
                let timeout = active.isEmpty ? Self.idlePollMilliseconds : 1_000
                _ = ccurl_multi_poll(multi.raw, nil, 0, timeout, nil)
            }
        }

        // Anything submitted between the last swap and `stopping` was refused by `submit`; anything still
        // queued was queued before `stopping` and is failed here.
        let leftovers = state.withLock { state in
            defer { state.incoming.removeAll() }
            return state.incoming
        }
        for transfer in leftovers {
            transfer.abandon(Self.shutDownError(transfer.url))
        }
    }

    /// Returns a finished transfer's easy handle to the pool. The transfer keeps its reference but never
    /// touches the handle again; `finishRequest` clears the pointers into the transfer and the request's
    /// body, and keeps the per-handle settings for the next transfer with the same options (as a program
    /// reusing one easy handle does).
    private func recycle(_ easy: CurlEasyHandle) {
        easy.finishRequest()
        state.withLock { state in
            if state.idleEasyHandles.count < Self.maxIdleEasyHandles { state.idleEasyHandles.append(easy) }
        }
    }

    static func cancelledError(_ url: URL) -> TransportError {
        TransportError(kind: .cancelled, url: url, message: "the request was cancelled")
    }

    static func shutDownError(_ url: URL) -> TransportError {
        TransportError(kind: .cancelled, url: url, message: "the HTTP client was shut down")
    }
}
