/// Checks `condition` every 50 ms until it holds (true) or `timeout` has passed (false, after one last check).
/// For conditions that are cheap async questions (an actor's state, a request to a test server); a condition
/// that blocks belongs on a dedicated thread (`onDedicatedThread`).
public func waitUntil(_ timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
