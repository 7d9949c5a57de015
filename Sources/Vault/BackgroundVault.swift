import Foundation
import Locking

/// The vault's operations as async calls: each runs the blocking file work (reads, and a write's two
/// fsyncs) on the vault's own I/O threads, never on one of the few threads of Swift's cooperative pool,
/// so a slow disk or a wait for the keyring lock never stalls the daemon's other tasks. Obtained from
/// ``Vault/background``; the synchronous methods of ``Vault`` stay for synchronous callers.
public struct BackgroundVault: Sendable {
    /// The vault the calls go to.
    public let vault: Vault

    /// Opens a vault (``Vault/open(stateDirectory:key:createIfMissing:scrypt:environment:)``) on the I/O
    /// threads: unlocking runs scrypt or a passphrase command.
    public static func open(
        stateDirectory: String, key: MasterKeySource, createIfMissing: Bool = false,
        scrypt: ScryptParameters = ScryptParameters(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(VaultError) -> Vault {
        try await IOThreads.vault.run { () throws(VaultError) -> Vault in
            try Vault.open(stateDirectory: stateDirectory, key: key, createIfMissing: createIfMissing, scrypt: scrypt, environment: environment)
        }
    }

    /// ``Vault/value(of:)``.
    public func value(of item: ItemReference) async throws(VaultError) -> [UInt8]? {
        try await IOThreads.vault.run { [vault] () throws(VaultError) -> [UInt8]? in try vault.value(of: item) }
    }

    /// ``Vault/set(_:for:)``.
    public func set(_ value: [UInt8], for item: ItemReference) async throws(VaultError) {
        try await IOThreads.vault.run { [vault] () throws(VaultError) in try vault.set(value, for: item) }
    }

    /// ``Vault/remove(_:)``.
    @discardableResult
    public func remove(_ item: ItemReference) async throws(VaultError) -> Bool {
        try await IOThreads.vault.run { [vault] () throws(VaultError) -> Bool in try vault.remove(item) }
    }

    /// ``Vault/list()``.
    public func list() async throws(VaultError) -> VaultListing {
        try await IOThreads.vault.run { [vault] () throws(VaultError) -> VaultListing in try vault.list() }
    }

    /// ``Vault/contents(of:)``: the daemon's restore of every site at start.
    public func contents(of kind: ItemKind) async throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError]) {
        try await IOThreads.vault.run { [vault] () throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError]) in
            try vault.contents(of: kind)
        }
    }

    /// ``Vault/names(of:)``.
    public func names(of kind: ItemKind) async throws(VaultError) -> (names: [String], problems: [VaultError]) {
        try await IOThreads.vault.run { [vault] () throws(VaultError) -> (names: [String], problems: [VaultError]) in
            try vault.names(of: kind)
        }
    }

    /// ``Vault/rotate()``.
    @discardableResult
    public func rotate() async throws(VaultError) -> RotationSummary {
        try await IOThreads.vault.run { [vault] () throws(VaultError) -> RotationSummary in try vault.rotate() }
    }
}

extension Vault {
    /// This vault's operations as async calls that run on the vault's I/O threads.
    public var background: BackgroundVault { BackgroundVault(vault: self) }
}

/// Long-lived threads for blocking file work. A job waits in a queue for a free thread; when every
/// thread is busy (a write waiting for the keyring lock, an fsync on a slow disk) another thread starts,
/// up to `maximumThreads`, so reads do not queue behind a stuck write. Threads beyond the first leave
/// after `idleTimeout` without work.
final class IOThreads: Sendable {
    /// The threads every vault's ``BackgroundVault`` calls share.
    static let vault = IOThreads(name: "vault io", maximumThreads: 8, idleTimeout: .seconds(10))

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var threads = 0
        var busy = 0
    }

    private let name: String
    private let maximumThreads: Int
    private let idleTimeout: Duration
    private let state = Locked(State())
    /// Counts the queued jobs: each submission signals once, each job taken waits once.
    private let queued = DispatchSemaphore(value: 0)

    init(name: String, maximumThreads: Int, idleTimeout: Duration) {
        self.name = name
        self.maximumThreads = maximumThreads
        self.idleTimeout = idleTimeout
    }

    /// Runs `body` on one of the threads and suspends the calling task until it returns.
    func run<T: Sendable, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await withCheckedContinuation { continuation in
            submit { continuation.resume(returning: Result { () throws(Failure) -> T in try body() }) }
        }
        return try result.get()
    }

    private func submit(_ job: @escaping @Sendable () -> Void) {
        let startThread = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard state.jobs.count > state.threads - state.busy, state.threads < maximumThreads else { return false }
            state.threads += 1
            return true
        }
        if startThread {
            let thread = Thread { [self] in work() }
            thread.name = name
            thread.start()
        }
        queued.signal()
    }

    private func work() {
        let idleSeconds = Double(idleTimeout.components.seconds)
        while true {
            if queued.wait(timeout: .now() + idleSeconds) == .timedOut {
                // Leave only when nothing is queued: a job submitted meanwhile counted this thread as free.
                let leave = state.withLock { state -> Bool in
                    guard state.jobs.isEmpty, state.threads > 1 else { return false }
                    state.threads -= 1
                    return true
                }
                if leave { return }
                continue
            }
            let job = state.withLock { state -> @Sendable () -> Void in
                state.busy += 1
                return state.jobs.removeFirst()
            }
            job()
            state.withLock { $0.busy -= 1 }
        }
    }
}
