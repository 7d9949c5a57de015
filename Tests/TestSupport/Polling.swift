internal import SanitizerSettings

/// How many times slower than a plain build this test process runs (1; 2 under AddressSanitizer, 5 under
/// ThreadSanitizer): a time allowed for something to happen is stretched by it, so that a sanitized run fails on
/// what is wrong and not on its own slowness. What a test measures (a latency, a timeout's precision) is not.
public let sanitizerSlowdown = Int(sessionkeeper_sanitizer_slowdown())

/// Checks `condition` every 50 ms until it holds (true) or `timeout` (times ``sanitizerSlowdown``) has passed
/// (false, after one last check). For conditions that are cheap async questions (an actor's state, a request to a
/// test server); a condition that blocks belongs on a dedicated thread (`onDedicatedThread`).
public func waitUntil(_ timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout * sanitizerSlowdown
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
