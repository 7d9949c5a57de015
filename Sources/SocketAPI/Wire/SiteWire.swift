import CookieJar
import Daemon
import Foundation
import JSON

/// The JSON objects of SPEC section 8 that describe sites and events. Times are RFC 3339 in UTC with `Z`;
/// an unknown time is `null`. Cookie names appear, cookie values never.
enum SiteWire {
    /// `{"name","state","expires_at","last_login","next_refresh","last_error"}`.
    static func site(_ status: Keeper.SiteStatus) -> JSONValue {
        .object(siteMembers(status))
    }

    /// The site plus `"cookies"` (the live cookies' names), `"user_agent"` and `"egress"` (how a logged-out
    /// answer looks, for clients that judge one themselves; `listenError`: why its loopback listener is down).
    static func detail(_ snapshot: SiteSnapshot, now: Date, listenError: String? = nil) -> JSONValue {
        var members = siteMembers(snapshot.status)
        let names = snapshot.record?.liveCookies(at: now).map { JSONValue.string($0.name) } ?? []
        members.append(("cookies", .array(names)))
        members.append(("user_agent", snapshot.record?.userAgent.map(JSONValue.string) ?? .null))
        members.append(("egress", egress(snapshot.site.egress, listenError: listenError)))
        return .object(members)
    }

    private static func siteMembers(_ status: Keeper.SiteStatus) -> [(key: String, value: JSONValue)] {
        [
            ("name", .string(status.name)),
            ("state", .string(status.phase.rawValue)),
            ("expires_at", time(status.expiresAt)),
            ("last_login", time(status.lastLogin)),
            ("next_refresh", time(status.nextRefresh)),
            ("last_error", status.lastError.map(JSONValue.string) ?? .null),
        ]
    }

    static func time(_ date: Date?) -> JSONValue {
        date.map { .string(CookieTime.rfc3339($0)) } ?? .null
    }

    /// One Server-Sent Event: `id:`, `event:` (`state` or `cookies`) and one `data:` line of JSON; nil for the
    /// keeper's events that are not shown (finished logins, which only feed the metrics).
    static func serverSentEvent(_ event: KeeperEvent, id: UInt64) -> String? {
        let kind: String
        let data: JSONValue
        switch event {
        case .state(let site, let time, let from, let to):
            kind = "state"
            data = .object([
                ("site", .string(site)), ("time", self.time(time)), ("from", .string(from.rawValue)), ("to", .string(to.rawValue)),
            ])
        case .cookies(let site, let time, let names, let expiresAt):
            kind = "cookies"
            data = .object([
                ("site", .string(site)), ("time", self.time(time)), ("names", .array(names.map(JSONValue.string))),
                ("expires_at", self.time(expiresAt)),
            ])
        case .loginFinished:
            return nil
        }
        return "id: \(id)\nevent: \(kind)\ndata: \(JSONWriter.write(data))\n\n"
    }

    /// The site an event is about.
    static func site(of event: KeeperEvent) -> String {
        switch event {
        case .state(let site, _, _, _), .cookies(let site, _, _, _), .loginFinished(let site, _, _): site
        }
    }
}
