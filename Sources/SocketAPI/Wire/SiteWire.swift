import CookieJar
import Daemon
import Foundation
import JSON
import Scheduler
import Sessions

/// The JSON objects of SPEC section 8 that describe sites and events. Times are RFC 3339 in UTC with `Z`;
/// an unknown time is `null`. Cookie names appear, cookie values never.
enum SiteWire {
    /// `{"name","state","expires_at","last_login","next_refresh","last_error","next_run","failures","retry_at",
    /// "attention","learned"}`, and `"prompt"` while the site is waiting-for-person. `learned` (SPEC section 7) is
    /// `{"idle_timeout":{"alive_s","dead_s","observations"},"lifetime":{...},"relearned"}` (seconds; `dead_s` null
    /// until a session was found dead that way), or null with `learn: false`.
    /// `listenError`, when the site's loopback listener is down, is added as `"listen_error"`: `status` shows
    /// it without a request per site.
    static func site(_ status: Keeper.SiteStatus, listenError: String? = nil) -> JSONValue {
        var members = siteMembers(status)
        if let listenError { members.append(("listen_error", .string(listenError))) }
        return .object(members)
    }

    /// The site plus `"cookies"` (the live cookies' names, `NAME (HOST)` where two hosts' share a name), `"user_agent"` and `"egress"` (how a logged-out
    /// answer looks, for clients that judge one themselves; `listenError`: why its loopback listener is down).
    static func detail(_ snapshot: SiteSnapshot, now: Date, listenError: String? = nil) -> JSONValue {
        var members = siteMembers(snapshot.status)
        let names = Cookie.labels(snapshot.record?.liveCookies(at: now) ?? []).map(JSONValue.string)
        members.append(("cookies", .array(names)))
        members.append(("user_agent", snapshot.record?.userAgent.map(JSONValue.string) ?? .null))
        members.append(("egress", egress(snapshot.site.egress, listenError: listenError)))
        return .object(members)
    }

    private static func siteMembers(_ status: Keeper.SiteStatus) -> [(key: String, value: JSONValue)] {
        var members = commonMembers(status)
        if let prompt = status.prompt { members.append(("prompt", Self.prompt(prompt))) }
        if let holds = status.holdsLease { members.append(("lease", .string(holds ? "held" : "following"))) }
        return members
    }

    private static func commonMembers(_ status: Keeper.SiteStatus) -> [(key: String, value: JSONValue)] {
        [
            ("name", .string(status.name)),
            ("state", .string(status.phase.rawValue)),
            ("expires_at", time(status.expiresAt)),
            ("last_login", time(status.lastLogin)),
            ("next_refresh", time(status.nextRefresh)),
            ("last_error", status.lastError.map(JSONValue.string) ?? .null),
            ("next_run", status.nextRun.map { .object([("kind", .string($0.kind.rawValue)), ("at", time($0.at))]) } ?? .null),
            ("failures", .number(String(status.failures))),
            ("retry_at", time(status.retryAt)),
            ("attention", status.attention.map { .object([("reason", .string($0.reason.rawValue)), ("what_to_do", .string($0.whatToDo))]) } ?? .null),
            ("learned", status.learned.map(learned) ?? .null),
        ]
    }

    static func learned(_ learned: LearnedLifetimes) -> JSONValue {
        func bounds(_ bounds: LearnedLifetimes.Bounds) -> JSONValue {
            .object([
                ("alive_s", .number(seconds(bounds.atLeast))), ("dead_s", bounds.atMost.map { .number(seconds($0)) } ?? .null),
                ("observations", .number(String(bounds.observations))),
            ])
        }
        return .object([
            ("idle_timeout", bounds(learned.idle)), ("lifetime", bounds(learned.lifetime)), ("relearned", .number(String(learned.relearned))),
        ])
    }

    /// Seconds to the millisecond, as JSON number text.
    private static func seconds(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }

    /// The prompt a waiting-for-person site's login waits on: `{"name","message","expires_at"}`.
    static func prompt(_ prompt: PromptRequest) -> JSONValue {
        .object([
            ("name", .string(prompt.name)), ("message", prompt.message.map(JSONValue.string) ?? .null),
            ("expires_at", time(prompt.expiresAt)),
        ])
    }

    /// The answer to a `refresh` that waited: the site, plus `"login"`, how the login it waited for ended
    /// (`{"outcome","error","ended_at"}`, `outcome` as in the metrics: `ok`, `site-down`, ...), and
    /// `"session_served"`, whether a session is served now (after a failed login, the old one when it is still
    /// valid).
    static func refreshed(_ status: Keeper.SiteStatus, sessionServed: Bool) -> JSONValue {
        var members = siteMembers(status)
        members.append(("login", status.lastAttempt.map { attempt in
            .object([
                ("outcome", .string(attempt.outcome.name)), ("error", attempt.outcome.reason.map(JSONValue.string) ?? .null),
                ("ended_at", time(attempt.endedAt)),
            ])
        } ?? .null))
        members.append(("session_served", .bool(sessionServed)))
        return .object(members)
    }

    /// `[{"file","errors"}]`: the site files that failed to load, for the peers that manage the daemon.
    static func failedFiles(_ failures: [SiteFileFailure]) -> JSONValue {
        .array(failures.map { .object([("file", .string($0.file)), ("errors", .array($0.errors.map(JSONValue.string)))]) })
    }

    /// `{"reachable", "since", "reason", "leases_held", "stale_writes"}`: a fleet keeper's store (SPEC section 11).
    static func store(_ fleet: FleetState) -> JSONValue {
        .object([
            ("reachable", .bool(fleet.storeReachable)), ("since", time(fleet.unreachableSince)),
            ("reason", fleet.unreachableReason.map(JSONValue.string) ?? .null),
            ("leases_held", .number(String(fleet.leasesHeld))), ("stale_writes", .number(String(fleet.staleWrites))),
        ])
    }

    static func time(_ date: Date?) -> JSONValue {
        date.map { .string(CookieTime.rfc3339($0)) } ?? .null
    }

    /// One Server-Sent Event: `id:`, `event:` (`state` or `cookies`) and one `data:` line of JSON; nil for the
    /// keeper's events that are not shown (finished logins and checks, which only feed the metrics).
    static func serverSentEvent(_ event: KeeperEvent, id: UInt64) -> String? {
        let kind: String
        let data: JSONValue
        switch event {
        case .state(let change):
            kind = "state"
            var members: [(key: String, value: JSONValue)] = [
                ("site", .string(change.site)), ("time", self.time(change.time)), ("from", .string(change.from.rawValue)),
                ("to", .string(change.to.rawValue)),
            ]
            if let reason = change.reason { members.append(("reason", .string(reason.rawValue))) }
            if let prompt = change.prompt { members.append(("prompt", self.prompt(prompt))) }
            data = .object(members)
        case .cookies(let site, let time, let names, let expiresAt):
            kind = "cookies"
            data = .object([
                ("site", .string(site)), ("time", self.time(time)), ("names", .array(names.map(JSONValue.string))),
                ("expires_at", self.time(expiresAt)),
            ])
        case .loginFinished, .checkFinished:
            return nil
        }
        return "id: \(id)\nevent: \(kind)\ndata: \(JSONWriter.write(data))\n\n"
    }

    /// The site an event is about.
    static func site(of event: KeeperEvent) -> String {
        switch event {
        case .state(let change): change.site
        case .cookies(let site, _, _, _), .loginFinished(let site, _, _), .checkFinished(let site, _, _): site
        }
    }
}
