import Foundation

/// What a run reports as it goes, for the CLI's verbose output and the daemon's log. Nothing in an event
/// holds a secret: URLs are redacted (no query, no user info), plugin stderr is masked.
public enum FlowEvent: Sendable {
    /// Something the user must know, such as TLS verification being off (`http.insecure`).
    case warning(site: String, message: String)
    /// A step begins (`index` counts from 1).
    case stepStarted(site: String, step: String, index: Int, count: Int)
    /// One request/response exchange; a step that follows redirects reports one per hop.
    case exchange(Exchange)
    /// One line of a plugin's standard error, with secrets masked.
    case pluginOutput(site: String, step: String, line: String)
    /// A step ended successfully.
    case stepFinished(site: String, timing: StepTiming)

    /// One HTTP exchange as the verbose output shows it.
    public struct Exchange: Sendable, Hashable {
        public var site: String
        public var step: String
        public var method: String
        /// `scheme://host[:port]/path`, with `?…` when the URL had a query.
        public var url: String
        public var status: Int
        public var duration: Duration
        /// 0 for the step's own request, then 1, 2... for each redirect followed.
        public var redirectHop: Int

        /// Whole milliseconds, as the CLI prints them.
        public var milliseconds: Int64 {
            let (seconds, attoseconds) = duration.components
            return seconds * 1000 + attoseconds / 1_000_000_000_000_000
        }
    }
}

/// Receives events synchronously, in order, from the task running the flow.
public typealias FlowObserver = @Sendable (FlowEvent) -> Void
