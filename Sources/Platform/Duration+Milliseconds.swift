extension Duration {
    /// The duration in whole milliseconds, truncated toward zero: what logs, progress lines, messages and
    /// `poll(2)` timeouts show and take. The one place the project turns a `Duration` into milliseconds.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
