import ArgumentParser
import CookieJar
import Foundation
import JSON
import Platform
import Sessions
import SiteConfig
import SocketRoutes

/// `sessionkeeper status [SITE] [--json]` (SPEC section 9): the daemon's sites table, or one site in full.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show every site the running daemon keeps: state, expiry, next run, last error.",
        discussion: """
            A table with times relative to now, fitted to the terminal's width: the next run is the login \
            (refresh), check or keepalive that comes first, with the failure count while a site backs off; the \
            last error is cut to the width left (`status SITE` shows it whole). Below it, what to do for each site \
            that needs attention, and the site files that failed to load with their errors (shown to the daemon's \
            managers only). `status SITE` shows one site in full, a field a line. --json prints the daemon's \
            answer to GET /v1/sites (or GET /v1/sites/SITE) as it is, for scripts (times in RFC 3339 UTC). Exit \
            status: 0 every enabled site is served, 1 a site needs attention or waits for a person (or the daemon \
            failed to answer), 3 no daemon runs.
            """
    )

    @Argument(help: "Show only this site, in full.")
    var site: String?

    @Flag(name: .long, help: "Print the daemon's JSON instead of a table.")
    var json = false

    @OptionGroup var socket: SocketOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let client = DaemonClient(try socket.daemonSocket())
            let route: SocketRoute = site == nil ? .sites : .site
            let path = route.target(site: site)
            let body: [UInt8]
            do throws(DaemonClientError) {
                body = Array(try client.request(route, site: site).body)
            } catch {
                throw CLIFailure(error)
            }
            if json { Console.outRaw(String(decoding: body, as: UTF8.self) + (body.last == 0x0A ? "" : "\n")) }
            guard let answer = try? JSONValue.parse(body) else {
                throw CLIFailure.failed("the daemon's answer to GET \(path) is not JSON")
            }
            let statuses: [SiteStatus]
            if site != nil {
                statuses = [SiteStatus(answer)]
                if !json { for line in SiteStatus(answer).fullLines(now: Date()) { Console.out(line) } }
            } else {
                guard case .array(let sites)? = answer["sites"] else {
                    throw CLIFailure.failed("the daemon's answer to GET \(path) has no 'sites' list")
                }
                statuses = sites.map(SiteStatus.init)
                if !json { Self.printTable(statuses, answer: answer) }
            }
            // SPEC section 9: 1 when a site needs a person, so a script or a monitor can tell without parsing.
            if statuses.contains(where: \.needsAPerson) { throw ExitCode(Exit.failed) }
        }
    }

    private static func printTable(_ statuses: [SiteStatus], answer: JSONValue) {
        for line in SitesTable.lines(statuses, now: Date(), width: Terminal.columns(1)) { Console.out(line) }
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
    /// `learned` (SPEC section 7): the idle timeout's and the lifetime's bounds; nil with `learn: false`.
    var learned: (idle: LearnedBounds, lifetime: LearnedBounds)?

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
        if let idle = LearnedBounds(value["learned"]?["idle_timeout"]), let lifetime = LearnedBounds(value["learned"]?["lifetime"]) {
            learned = (idle, lifetime)
        }
        if case .string(let promptName)? = value["prompt"]?["name"] {
            var message: String?
            if case .string(let text)? = value["prompt"]?["message"] { message = text }
            prompt = (promptName, message)
        }
    }

    /// Whether the site waits for a person: it needs attention or a prompt waits for an answer.
    var needsAPerson: Bool { state == "needs-attention" || state == "waiting-for-person" || attentionReason != nil }

    /// `status SITE`: every field the daemon gave, one a line, the last error whole.
    func fullLines(now: Date) -> [String] {
        var lines = ["site:        \(name)", "state:       \(state)"]
        func time(_ label: String, _ date: Date?) {
            guard let date else { return }
            lines.append(label.padding(toLength: 13, withPad: " ", startingAt: 0)
                + "\(CookieTime.rfc3339(date, fractional: false)) (\(SitesTable.relative(date, now: now)))")
        }
        time("expires:", expiresAt)
        time("last login:", lastLogin)
        time("refresh:", nextRefresh)
        if nextRun != nil { lines.append("next run:    \(SitesTable.nextRun(self, now: now))") }
        time("retry at:", retryAt)
        if let userAgent { lines.append("user agent:  \(userAgent)") }
        if let prompt {
            lines.append("waits for:   '\(prompt.name)'" + (prompt.message.map { ": \($0)" } ?? ""))
            lines.append("answer with: sessionkeeper answer \(name) \(prompt.name)")
        }
        if let attentionReason { lines.append("attention:   \(attentionReason): \(whatToDo ?? "see its last error")") }
        if let listenError { lines.append("listener:    down (\(listenError))") }
        if let learned {
            lines.append("idle timeout: \(learned.idle.sentence)")
            lines.append("lifetime:    \(learned.lifetime.sentence)")
        } else {
            lines.append("learned:     nothing (learn: false)")
        }
        lines.append("last error:  \(lastError.map { $0.replacingOccurrences(of: "\n", with: " ") } ?? "-")")
        return lines
    }

    /// What the last column shows: the waiting prompt and how to answer it, else the last error.
    var note: String {
        if let prompt {
            return (prompt.message.map { "asks: \($0); " } ?? "") + "answer with: sessionkeeper answer \(name) \(prompt.name)"
        }
        // The table's first column names the site already.
        guard let lastError else { return "-" }
        let oneLine = lastError.replacingOccurrences(of: "\n", with: " ")
        let prefix = "site '\(name)', "
        return oneLine.hasPrefix(prefix) ? String(oneLine.dropFirst(prefix.count)) : oneLine
    }
}

/// The `status` table: aligned columns, times relative to `now`, "-" for none.
enum SitesTable {
    /// - Parameter width: the terminal's columns: the last column is cut to what is left (at least 20 characters,
    ///   ending in `…`); nil (not a terminal) leaves it whole.
    static func lines(_ sites: [SiteStatus], now: Date, width: Int? = nil) -> [String] {
        let header = ["SITE", "STATE", "EXPIRES", "NEXT RUN", "LEARNED", "LAST ERROR"]
        let rows = sites.map { site in
            [site.name, site.state, relative(site.expiresAt, now: now), nextRun(site, now: now), learned(site), site.note]
        }
        let widths = (0..<header.count - 1).map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        return ([header] + rows).map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                if column < widths.count {
                    line += cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0)
                } else if let width, line.count + cell.count > width {
                    let room = max(width - line.count, 20)
                    line += cell.count > room ? String(cell.prefix(room - 1)) + "…" : cell
                } else {
                    line += cell
                }
            }
            return line
        }
    }

    /// `15s-20s/>1m28s`: the learned idle timeout and lifetime, `?` for one nothing was learned of, `-` for a site
    /// with no observation yet, `off` with `learn: false`. Kept short: the table fits 80 columns.
    static func learned(_ site: SiteStatus) -> String {
        guard let learned = site.learned else { return "off" }
        guard learned.idle.observations + learned.lifetime.observations > 0 else { return "-" }
        return "\(learned.idle.range)/\(learned.lifetime.range)"
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

/// One learned duration as `GET /v1/sites` gives it: `{"alive_s","dead_s","observations"}`.
struct LearnedBounds {
    var alive: Double
    var dead: Double?
    var observations: Int

    init(_ bounds: LearnedLifetimes.Bounds) {
        alive = bounds.atLeast
        dead = bounds.atMost
        observations = bounds.observations
    }

    init?(_ value: JSONValue?) {
        guard let value, case .number(let alive)? = value["alive_s"], let aliveSeconds = Double(alive),
              case .number(let count)? = value["observations"], let observations = Int(count)
        else { return nil }
        self.alive = aliveSeconds
        if case .number(let dead)? = value["dead_s"] { self.dead = Double(dead) }
        self.observations = observations
    }

    /// `15s-20s` (between), `>15s` (no death yet), `?` (nothing observed).
    var range: String {
        guard observations > 0 else { return "?" }
        guard let dead else { return ">" + Self.text(alive) }
        return Self.text(alive) + "-" + Self.text(dead)
    }

    /// `between 15s and 20s (12 observations)`, for `status SITE`.
    var sentence: String {
        guard observations > 0 else { return "not known yet" }
        let plural = observations == 1 ? "" : "s"
        guard let dead else { return "over \(Self.text(alive)) (\(observations) observation\(plural); no session died of it yet)" }
        return "between \(Self.text(alive)) and \(Self.text(dead)) (\(observations) observation\(plural))"
    }

    static func text(_ seconds: Double) -> String {
        DurationText.format(.seconds(Int64(seconds.rounded(.down))))
    }

    /// As the daemon's learner holds it.
    var lifetimeBounds: LearnedLifetimes.Bounds { LearnedLifetimes.Bounds(atLeast: alive, atMost: dead, observations: observations) }
}
