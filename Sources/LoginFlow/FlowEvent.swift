import Foundation
import Platform

/// What a run reports as it goes, for the CLI's verbose output and the daemon's log. Nothing in an event
/// holds a secret: URLs are redacted (no query, no user info), plugin stderr is masked.
public enum FlowEvent: Sendable {
    /// Something the user must know, such as TLS verification being off (`http.insecure`).
    case warning(site: String, message: String)
    /// What a step does that is worth a line in `login -v` and the log: waiting for the next TOTP period, a code
    /// tried again with the next period's.
    case notice(site: String, step: String, message: String)
    /// A step begins (`index` counts from 1).
    case stepStarted(site: String, step: String, index: Int, count: Int)
    /// One request/response exchange; a step that follows redirects reports one per hop.
    case exchange(Exchange)
    /// One line of a plugin's standard error, with secrets masked.
    case pluginOutput(site: String, step: String, line: String)
    /// A step ended successfully.
    case stepFinished(site: String, timing: StepTiming)
    /// A step was not run: the previous response does not meet its `when:` (`reason` says which condition
    /// and what was found, masked as errors are).
    case stepSkipped(site: String, step: String, index: Int, count: Int, reason: String)
    /// The last response of `step` meets `login.done_when:`, so the login ended there, successfully as far as
    /// the flow goes (the essential cookies are still checked); `stepsLeft` steps were not run.
    case loginDone(site: String, step: String, stepsLeft: Int)
    /// With ``FlowEngine/tracesExchanges`` only: a request as sent, headers and the start of the body
    /// masked (see ``Trace``).
    case requestTrace(Trace)
    /// With ``FlowEngine/tracesExchanges`` only: a response as received, masked.
    case responseTrace(Trace)
    /// With ``FlowEngine/tracesExchanges`` only: what the jar did with a cookie of a response.
    case cookieTrace(CookieTrace)
    /// With ``FlowEngine/tracesExchanges`` only: the JSON a plugin got on stdin or answered on stdout, masked
    /// (see ``PluginTrace``).
    case pluginTrace(PluginTrace)

    /// A plugin exchange for a plugin author debugging it (`login -vv`). Credentials, cookie values, returned
    /// header values and localStorage values are replaced by `<masked>`, a Set-Cookie line keeps its name and
    /// attributes, `last_response.body` is cut to ``FlowEngine/traceBodyLength`` characters, and every other
    /// string is masked like the rest of the run's output.
    public struct PluginTrace: Sendable, Hashable {
        public enum Direction: Sendable, Hashable {
            /// What SessionKeeper wrote on the plugin's standard input.
            case input
            /// What the plugin printed on its standard output.
            case output
        }

        public var site: String
        public var step: String
        public var direction: Direction
        /// One JSON object on one line.
        public var json: String
    }

    /// The details of one request or response for a site author debugging a flow (`login -vv`, as Hurl's
    /// `--very-verbose`). `Cookie`, `Set-Cookie` and `Authorization` values are replaced by `<masked>`
    /// (a cookie keeps its name), and every credential, extracted value and cookie value is masked.
    public struct Trace: Sendable, Hashable {
        public var site: String
        public var step: String
        /// The request's method, or "" for a response.
        public var method: String
        /// Redacted as in ``Exchange/url``.
        public var url: String
        /// The status, or 0 for a request.
        public var status: Int
        public var headers: [Header]
        /// The first ``FlowEngine/traceBodyLength`` characters of the body, masked; "" when it has none.
        public var bodyStart: String
        /// The whole body's length in bytes.
        public var bodyLength: Int

        public struct Header: Sendable, Hashable {
            public var name: String
            public var value: String

            public init(name: String, value: String) {
                self.name = name
                self.value = value
            }
        }
    }

    /// A Set-Cookie of a response, and what the jar did with it.
    public struct CookieTrace: Sendable, Hashable {
        public enum Outcome: Sendable, Hashable {
            case stored
            /// The header was ignored (the reason never holds the value).
            case refused(reason: String)
            /// A cookie already in the jar was removed by this response (`reason` says why).
            case evicted(reason: String)
        }

        public var site: String
        public var step: String
        /// The cookie's name; nil when the header was refused before a name was read.
        public var name: String?
        /// `domain/path` for stored and evicted cookies.
        public var scope: String?
        public var outcome: Outcome
    }

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
        /// The names of the URL's query parameters, in order (masked as the run's output is): what tells apart
        /// steps whose URLs differ only in their query (`doku.php?do=login`).
        public var queryNames: [String] = []
        /// With ``FlowEngine/tracesExchanges`` only: the query as sent, every credential, extracted value and
        /// cookie value in it masked; nil otherwise.
        public var maskedQuery: String?

        /// Whole milliseconds, as the CLI prints them.
        public var milliseconds: Int64 { duration.wholeMilliseconds }
    }
}

/// Receives events synchronously, in order, from the task running the flow.
public typealias FlowObserver = @Sendable (FlowEvent) -> Void
