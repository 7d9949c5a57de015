import ArgumentParser
import CookieJar
import Foundation
import JSON
import SiteConfig

/// `sessionkeeper status [--json]` (SPEC section 9): the daemon's sites table.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show every site the running daemon keeps: state, expiry, next run, last error.",
        discussion: """
            A table with times relative to now: the next run is the login (refresh), check or keepalive that \
            comes first, with the failure count while a site backs off. Below it, what to do for each site \
            that needs attention, and the site files that failed to load with their errors (shown to the \
            daemon's managers only). --json prints the daemon's answer to GET /v1/sites as it is, for scripts \
            (times in RFC 3339 UTC). Exit status: 0 shown, 1 the daemon failed to answer, 3 no daemon runs.
            """
    )

    @Flag(name: .long, help: "Print the daemon's JSON instead of a table.")
    var json = false

    @OptionGroup var socket: SocketOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let client = DaemonClient(try socket.daemonSocket())
            let answer: JSONValue
            do throws(DaemonClientError) {
                if json {
                    let body = try client.request("GET", "/v1/sites").body
                    Console.outRaw(String(decoding: body, as: UTF8.self) + (body.last == 0x0A ? "" : "\n"))
                    return
                }
                answer = try client.json("GET", "/v1/sites")
            } catch {
                throw CLIFailure(error)
            }
            guard case .array(let sites)? = answer["sites"] else {
                throw CLIFailure.failed("the daemon's answer to GET /v1/sites has no 'sites' list")
            }
            let statuses = sites.map(SiteStatus.init)
            for line in SitesTable.lines(statuses, now: Date()) { Console.out(line) }
            for site in statuses {
                guard let reason = site.attentionReason else { continue }
                Console.out("\(site.name) needs attention (\(reason)): \(site.whatToDo ?? "see its last error")")
            }
            for site in statuses {
                guard let problem = site.listenError else { continue }
                Console.out("\(site.name): its egress listener is down (\(problem)); the socket's proxy route still serves it")
            }
            if let store = answer["store"] {
                Console.out(StoreLine.text(store))
            }
            if case .array(let failed)? = answer["failed_files"], !failed.isEmpty {
                Console.out("site files that failed to load (a site that loaded before runs on its last good definition):")
                for file in failed {
                    guard case .array(let errors)? = file["errors"] else { continue }
                    for case .string(let error) in errors { Console.out("  \(error)") }
                }
            }
        }
    }
}

/// One site as `GET /v1/sites` describes it (SPEC section 8); fields the answer lacks are nil.
struct SiteStatus {
    var name: String
    var state: String
    var expiresAt: Date?
    var lastLogin: Date?
    var nextRefresh: Date?
    var lastError: String?
    var userAgent: String?
    /// `next_run`: `refresh`, `check` or `keepalive`, and when.
    var nextRun: (kind: String, at: Date)?
    /// Consecutive failures while the site backs off.
    var failures: Int
    var retryAt: Date?
    /// `attention`: why the site waits for a person, and what to do.
    var attentionReason: String?
    var whatToDo: String?
    /// The prompt a waiting-for-person site's login waits on: its name and message.
    var prompt: (name: String, message: String?)?
    /// Why the site's loopback egress listener is down (`listen_error`).
    var listenError: String?

    init(_ value: JSONValue) {
        func text(_ key: String) -> String? {
            if case .string(let text)? = value[key] { return text }
            return nil
        }
        name = text("name") ?? "?"
        state = text("state") ?? "?"
        expiresAt = text("expires_at").flatMap(CookieTime.parseRFC3339)
        lastLogin = text("last_login").flatMap(CookieTime.parseRFC3339)
        nextRefresh = text("next_refresh").flatMap(CookieTime.parseRFC3339)
        lastError = text("last_error")
        listenError = text("listen_error")
        userAgent = text("user_agent")
        if case .string(let kind)? = value["next_run"]?["kind"], case .string(let at)? = value["next_run"]?["at"],
           let date = CookieTime.parseRFC3339(at) {
            nextRun = (kind, date)
        }
        if case .number(let count)? = value["failures"] { failures = Int(count) ?? 0 } else { failures = 0 }
        retryAt = text("retry_at").flatMap(CookieTime.parseRFC3339)
        if case .string(let reason)? = value["attention"]?["reason"] { attentionReason = reason }
        if case .string(let advice)? = value["attention"]?["what_to_do"] { whatToDo = advice }
        if case .string(let promptName)? = value["prompt"]?["name"] {
            var message: String?
            if case .string(let text)? = value["prompt"]?["message"] { message = text }
            prompt = (promptName, message)
        }
    }

    /// What the last column shows: the waiting prompt and how to answer it, else the last error.
    var note: String {
        if let prompt {
            return (prompt.message.map { "asks: \($0); " } ?? "") + "answer with: sessionkeeper answer \(name) \(prompt.name)"
        }
        return lastError.map { $0.replacingOccurrences(of: "\n", with: " ") } ?? "-"
    }
}

/// The `status` table: aligned columns, times relative to `now`, "-" for none.
enum SitesTable {
    static func lines(_ sites: [SiteStatus], now: Date) -> [String] {
        let header = ["SITE", "STATE", "EXPIRES", "NEXT RUN", "LAST ERROR"]
        let rows = sites.map { site in
            [site.name, site.state, relative(site.expiresAt, now: now), nextRun(site, now: now), site.note]
        }
        let widths = (0..<header.count - 1).map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        return ([header] + rows).map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                line += column < widths.count ? cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0) : cell
            }
            return line
        }
    }

    /// `check in 4m`, `refresh in 30s (failure 2)`: the next run, and while failing how many attempts failed.
    static func nextRun(_ site: SiteStatus, now: Date) -> String {
        guard let next = site.nextRun else { return "-" }
        let failing = site.failures > 0 ? " (failure \(site.failures))" : ""
        return "\(next.kind) \(relative(next.at, now: now))\(failing)"
    }

    /// `in 1h5m`, `3m20s ago`: to the second under an hour, to the minute beyond.
    static func relative(_ date: Date?, now: Date) -> String {
        guard let date else { return "-" }
        let seconds = Int64(date.timeIntervalSince(now).rounded())
        let magnitude = abs(seconds)
        let shown = magnitude >= 3600 ? magnitude / 60 * 60 : magnitude
        let text = DurationText.format(.seconds(shown))
        if seconds == 0 { return "now" }
        return seconds > 0 ? "in \(text)" : "\(text) ago"
    }
}

/// The fleet's store as `GET /v1/sites` describes it (`store`, fleet mode only), in one line.
enum StoreLine {
    static func text(_ store: JSONValue) -> String {
        let leases: String
        if case .number(let held)? = store["leases_held"] { leases = "; this keeper holds \(held) lease(s)" } else { leases = "" }
        guard case .bool(false)? = store["reachable"] else { return "store: reachable\(leases)" }
        var line = "store: UNREACHABLE"
        if case .string(let since)? = store["since"] { line += " since \(since)" }
        if case .string(let reason)? = store["reason"] { line += " (\(reason))" }
        return line + "; serving the sessions held until they expire, no login starts\(leases)"
    }
}
