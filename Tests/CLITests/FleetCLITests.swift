import Foundation
import Platform
import Synchronization
import TestSupport
import Testing

/// Fleet mode end to end (SPEC section 11, issue 28): three `sessionkeeper run` processes, each with its own state
/// folder and socket, the same sites/ and master key, on one real PostgreSQL, keeping 30 sites of a loopback server
/// (Fixtures/fleet_site.py) that counts each site's logins and notices two logins of a site at the same time.
///
/// One world, in phases, to keep the wall time modest on 2 cores: (1) every site logged in exactly once, every
/// keeper serving every session, the leases spread; (5) a session rotated by its holder served by the others; a
/// client of a keeper that does not hold a site waiting (`min_valid`, `wait`) for the holder's login;
/// (2) the holder of a site stopped (SIGSTOP) during its login: the site taken over within lease + one renewal
/// period, its late write refused (or its run stopped) after SIGCONT, the successor's session served everywhere;
/// (3) a keeper killed (SIGKILL): its sites taken over within the same bound, nothing logged in again; (4) the
/// database stopped (`pg_ctl stop -m immediate`): every keeper says so and serves what it has, no login starts, and
/// all resume once it is back.
@Suite(.serialized, .enabled(if: curlAndPythonInstalled, "needs curl and python3"))
struct FleetCLITests {
    static let siteCount = 30
    static let lease: Duration = .seconds(3)
    static let renewal: Duration = .seconds(1)
    static var siteNames: [String] { (1...siteCount).map { String(format: "s%02d", $0) } }

    @Test func threeKeepersOneDatabase() async throws {
        let database = try await PostgresServer.start()
        let folder = try TemporaryFolder()
        let script = Bundle.module.url(forResource: "fleet_site", withExtension: "py", subdirectory: "Fixtures")?.path ?? ""
        let site: PythonServer
        do {
            site = try await PythonServer.start(script: script)
        } catch {
            await database.cleanUp()
            folder.cleanUp()
            throw error
        }
        var world: FleetWorld?
        var failure: (any Error)?
        do {
            world = try await FleetWorld.make(database: database, folder: folder, site: site)
            try await exercise(try #require(world))
        } catch {
            failure = error
        }
        // Whatever happened: no keeper, server or database outlives the test.
        await world?.stopAll()
        await site.stop()
        await database.cleanUp()
        folder.cleanUp()
        if let failure { throw failure }
    }

    private func exercise(_ world: FleetWorld) async throws {
        // A keeper whose master key is not the fleet's stops at once, saying why, rather than waiting forever.
        try #require(FileManager.default.createFile(
            atPath: world.folder.path("other.key"), contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
            attributes: [.posixPermissions: 0o600]))
        let stranger = FleetKeeper(index: 9, folder: world.folder, databaseURL: world.keepers[0].databaseURL, keyFile: "other.key")
        try stranger.writeConfig()
        try await stranger.start()
        let ended = await stranger.child?.wait(within: .seconds(20))
        #expect(ended == .exited(1), "a keeper with another master key: \(String(describing: ended)): \(stranger.log.suffix(1000))")
        #expect(stranger.log.contains("cannot open the fleet's store"), "\(stranger.log.suffix(1000))")

        // (1) Every site logged in once, by one keeper; every keeper serves every site.
        for keeper in world.keepers { try await keeper.start() }
        let allValid = try await waitUntil(.seconds(40)) {
            for keeper in world.keepers where try await keeper.sites().values.filter({ $0.state == "valid" }).count < Self.siteCount {
                return false
            }
            return true
        }
        #expect(allValid, "not every keeper serves 30 valid sites: \(world.logs())")
        let first = try await world.stats()
        // Every site once. The one reason a second login is right is a lease lost during the first (its renewal
        // did not land within the 3 s lease on a machine loaded by the whole suite): the run is cut, its write would
        // be refused, and the next holder must log in. A lease given back for balance never cuts a login
        // (`Keeper.releaseLeases` chooses and releases in one step), so a second login without a logged loss is a
        // defect.
        #expect(Set(first.logins.keys) == Set(Self.siteNames), "logins per site: \(first.logins)")
        for (name, count) in first.logins.sorted(by: { $0.key < $1.key }) where count != 1 {
            let lost = world.keepers.flatMap { $0.logLines(about: name) }.filter { $0.contains("lease lost") }
            #expect(count == 2 && !lost.isEmpty, "site \(name) logged in \(count) times: \(world.keepers.map { $0.logLines(about: name) })")
        }
        #expect(first.overlaps.isEmpty, "overlapping logins: \(first.overlaps)")
        let spread = try await waitUntil(.seconds(15)) {
            let held = try await world.heldCounts()
            return held.reduce(0, +) == Self.siteCount && held.allSatisfy { $0 <= (Self.siteCount + 2) / 3 }
        }
        let heldCounts = try await world.heldCounts()
        #expect(spread, "leases not spread over the three keepers: \(heldCounts)")
        var served: [String: String] = [:]
        for name in Self.siteNames {
            let values = try await world.keepers.asyncMap { try await $0.cookie(name) }
            #expect(Set(values).count == 1 && values[0] != nil, "site \(name): the keepers serve different sessions")
            served[name] = values[0]
        }

        // (5) A session rotated by its holder reaches the others.
        let rotated = "s01"
        let holder = try await world.holder(of: rotated)
        let refresh = try await holder.run(["refresh", rotated, "--wait", "20s"])
        #expect(refresh.status == 0, "\(refresh.stderr)")
        let newValue = try await holder.cookie(rotated)
        #expect(newValue != nil && newValue != served[rotated])
        let propagated = try await waitUntil(.seconds(2)) {
            try await world.keepers.asyncMap { try await $0.cookie(rotated) }.allSatisfy { $0 == newValue }
        }
        #expect(propagated, "the rotated session did not reach every keeper within 2 s")

        // min_valid/wait fleet-wide: a client of a keeper that does not hold the site asks for a session valid
        // longer than the one served; the holder learns of it, logs in, and the client gets the new session.
        let wanted = "s04"
        let wantedHolder = try await world.holder(of: wanted)
        let follower = try #require(world.keepers.first { $0 !== wantedHolder })
        try await Task.sleep(for: .seconds(1))
        let waited = try await follower.run(["cookie", wanted, "--min-valid", "3595s", "--wait", "15s"])
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(waited.stdout.contains("fleet_\(wanted)=\(wanted)-2-"), "the follower's client did not get the holder's new login")
        #expect(try await world.stats().logins[wanted] == 2)

        // (2) The holder of a site stopped during its login, past its lease.
        let victim = "s02"
        let stopped = try await world.holder(of: victim)
        try await world.post("/park?site=\(victim)")
        let parkedLogin = Task { try await stopped.run(["refresh", victim, "--wait", "60s"]) }
        #expect(try await waitUntil(.seconds(10)) { try await world.stats().active[victim] == 1 }, "the login did not start")
        stopped.child?.send(SIGSTOP)
        let stoppedAt = ContinuousClock.now
        try await world.post("/release?site=\(victim)")
        let others = world.keepers.filter { $0 !== stopped }
        let takenOver = try await waitUntil(.seconds(15)) {
            try await others.asyncMap { try await $0.sites()[victim]?.lease }.contains("held")
        }
        let takeover = ContinuousClock.now - stoppedAt
        print("SIGSTOP to takeover of \(victim): \(takeover.wholeMilliseconds) ms")
        #expect(takenOver && takeover <= Self.lease + Self.renewal + .seconds(1), "taken over after \(takeover)")
        let beforeContinue = try await others[0].cookie(victim)
        stopped.child?.send(SIGCONT)
        _ = try? await parkedLogin.value
        let refused = await RunCLITests.eventually(within: .seconds(10)) {
            stopped.log.contains("session write refused for a stale lease epoch") || stopped.log.contains("lease lost")
        }
        #expect(refused, "the continued keeper neither refused its write nor stopped its run: \(stopped.log.suffix(2000))")
        print("after SIGCONT: " + (stopped.log.contains("session write refused for a stale lease epoch") ? "the write was refused for its stale epoch" : "the run was stopped on the lost lease"))
        let same = try await waitUntil(.seconds(5)) {
            try await world.keepers.asyncMap { try await $0.cookie(victim) }.allSatisfy { $0 == beforeContinue }
        }
        #expect(same && beforeContinue?.hasPrefix("\(victim)-2-") == false, "the stopped keeper's late session is served")
        #expect(try await world.stats().overlaps.isEmpty, "two logins of a site at the same time")

        // (3) A keeper killed: its sites are taken over, nothing is logged in again.
        let beforeKill = try await world.stats().logins
        let heldNow = try await world.keepers.asyncMap { try await $0.sites().filter { $0.value.lease == "held" }.map(\.key) }
        let killedIndex = try #require(heldNow.indices.max { heldNow[$0].count < heldNow[$1].count })
        let killed = world.keepers[killedIndex]
        let killedHeld = heldNow[killedIndex]
        #expect(!killedHeld.isEmpty)
        _ = await killed.child?.kill()
        let killedAt = ContinuousClock.now
        let survivors = world.keepers.filter { $0 !== killed }
        let adopted = try await waitUntil(.seconds(15)) {
            let held = try await survivors.asyncMap { try await $0.sites().filter { $0.value.lease == "held" }.count }
            return held.reduce(0, +) == Self.siteCount
        }
        let adoption = ContinuousClock.now - killedAt
        print("SIGKILL to all \(killedHeld.count) sites held by the others: \(adoption.wholeMilliseconds) ms")
        #expect(adopted && adoption <= Self.lease + Self.renewal + .seconds(1), "taken over after \(adoption)")
        #expect(try await world.stats().logins == beforeKill, "a site was logged in again after the kill")

        // (4) The database stopped: served from memory, said, no login; back by itself.
        let beforeOutage = try await world.stats().logins
        let logOffsets = survivors.map { $0.log.count }
        try await world.database.stop(mode: "immediate")
        let told = try await waitUntil(.seconds(15)) {
            try await survivors.asyncMap { try await $0.storeReachable() }.allSatisfy { $0 == false }
        }
        #expect(told, "a keeper does not report the store unreachable")
        try await Task.sleep(for: Self.lease + Self.renewal)
        for keeper in survivors {
            let sites = try await keeper.sites()
            #expect(sites.values.filter { $0.state == "valid" }.count == Self.siteCount, "a keeper stopped serving during the outage")
            #expect(sites.values.allSatisfy { $0.lease != "held" }, "a keeper kept a lease the database could not renew")
            #expect(try await keeper.cookie("s03") == served["s03"])
        }
        #expect(try await world.stats().logins == beforeOutage, "a login started while the database was down")
        try await world.database.startServer()
        let resumed = try await waitUntil(.seconds(20)) {
            let reachable = try await survivors.asyncMap { try await $0.storeReachable() }.allSatisfy { $0 == true }
            let held = try await survivors.asyncMap { try await $0.sites().filter { $0.value.lease == "held" }.count }
            return reachable && held.reduce(0, +) == Self.siteCount
        }
        #expect(resumed, "the keepers did not resume after the database came back: \(world.logs())")
        #expect(try await world.stats().logins == beforeOutage, "a site was logged in again after the outage")
        // One line per change, not one per attempt (about ten renewals failed): unreachable, then reachable again
        // once, though the pool's first statements after the restart may still time out while its connections
        // come back (reachability rises only after successes held for a renewal period).
        for (keeper, offset) in zip(survivors, logOffsets) {
            let lines = keeper.log.dropFirst(offset).split(separator: "\n")
                .filter { $0.contains("store unreachable;") || $0.contains("store reachable again") }
            #expect(lines.count == 2 && lines[0].contains("store unreachable;") && lines[1].contains("store reachable again"),
                    "keeper \(keeper.index): \(lines)")
        }

        // Never a cookie value in a keeper's log.
        for value in served.values + [newValue ?? ""] where !value.isEmpty {
            #expect(world.keepers.allSatisfy { !$0.log.contains(value) }, "a cookie value in a keeper's log")
        }
    }
}

/// The database, the site server and the three keepers of one fleet test.
final class FleetWorld: Sendable {
    let database: PostgresServer
    let folder: TemporaryFolder
    let site: PythonServer
    /// `http://ADDRESS:PORT` of the site server: on loopback, or on a veth address in the namespace test.
    let siteOrigin: String
    let keepers: [FleetKeeper]

    init(database: PostgresServer, folder: TemporaryFolder, site: PythonServer, siteOrigin: String, keepers: [FleetKeeper]) {
        self.database = database
        self.folder = folder
        self.site = site
        self.siteOrigin = siteOrigin
        self.keepers = keepers
    }

    /// The site files, the master key and the keyring, and three keepers (not started). `namespaced`, when
    /// given, makes the keeper of that index run in a network namespace with its own database URL.
    static func make(
        database: PostgresServer, folder: TemporaryFolder, site: PythonServer, siteAddress: String = "127.0.0.1",
        namespaced: (index: Int, namespace: String, databaseURL: String)? = nil
    ) async throws -> FleetWorld {
        let name = try await database.createDatabase()
        let url = database.url(database: name)
        let siteOrigin = "http://\(siteAddress):\(site.port)"
        try FileManager.default.createDirectory(atPath: folder.path("sites"), withIntermediateDirectories: true)
        // Without learning: with it, a `min_valid` asked of a follower went unanswered by the holder in 2 of 9
        // runs (the holder logged in no more; issue 43 is open on it); these tests are about the fleet's own rules.
        for name in FleetCLITests.siteNames {
            try """
                base_url: \(siteOrigin)
                login:
                  steps:
                    - name: sign in
                      post: /\(name)/login
                      expect: {status: 200, cookie: fleet_\(name)}
                cookies:
                  essential: [fleet_\(name)]
                learn: false

                """.write(toFile: folder.path("sites/\(name).yaml"), atomically: true, encoding: .utf8)
        }
        let keepers = (1...3).map { index in
            guard let namespaced, namespaced.index == index else { return FleetKeeper(index: index, folder: folder, databaseURL: url) }
            return FleetKeeper(
                index: index, folder: folder, databaseURL: namespaced.databaseURL.replacingOccurrences(of: "DATABASE", with: name),
                namespace: namespaced.namespace)
        }
        for keeper in keepers { try keeper.writeConfig() }
        // The shared master key (32 random bytes, mode 0600) and the database's keyring, made once before the keepers start.
        var key = [UInt8](repeating: 0, count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        try #require(FileManager.default.createFile(
            atPath: folder.path("master.key"), contents: Data(key), attributes: [.posixPermissions: 0o600]))
        let initialized = try await keepers[0].run(["vault", "init"])
        try #require(initialized.status == 0, "vault init: \(initialized.stderr)")
        return FleetWorld(database: database, folder: folder, site: site, siteOrigin: siteOrigin, keepers: keepers)
    }

    struct Stats {
        var logins: [String: Int]
        var active: [String: Int]
        var overlaps: [String]
    }

    func stats() async throws -> Stats {
        let text = try await runCurl([siteOrigin + "/stats"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return Stats(
            logins: object["logins"] as? [String: Int] ?? [:], active: object["active"] as? [String: Int] ?? [:],
            overlaps: object["overlaps"] as? [String] ?? [])
    }

    func post(_ path: String) async throws {
        _ = try await runCurl(["-X", "POST", siteOrigin + path])
    }

    /// How many leases each running keeper holds.
    func heldCounts() async throws -> [Int] {
        try await keepers.filter(\.isRunning).asyncMap { try await $0.sites().values.filter { $0.lease == "held" }.count }
    }

    /// The running keeper holding `site`'s lease now.
    func holder(of site: String) async throws -> FleetKeeper {
        var found: FleetKeeper?
        _ = try await waitUntil(.seconds(10)) {
            for keeper in self.keepers where keeper.isRunning {
                if try await keeper.sites()[site]?.lease == "held" { found = keeper }
            }
            return found != nil
        }
        return try #require(found, "nobody holds \(site)")
    }

    func logs() -> String {
        keepers.map { "--- keeper \($0.index):\n\($0.log.suffix(3000))" }.joined(separator: "\n")
    }

    func stopAll() async {
        for keeper in keepers {
            keeper.child?.send(SIGCONT)
            if let child = keeper.child { _ = await RunCLITests.stop(child) }
        }
    }
}

/// One `sessionkeeper run` of the fleet: its folder, config.yaml and socket, and its process once started.
final class FleetKeeper: Sendable {
    let index: Int
    let folder: TemporaryFolder
    let databaseURL: String
    private let process = Mutex<RunningChild?>(nil)

    /// The master key file, in the fleet's folder.
    let keyFile: String
    /// The network namespace `run` starts in (`ip netns exec`); nil for the test's own.
    let namespace: String?

    init(index: Int, folder: TemporaryFolder, databaseURL: String, keyFile: String = "master.key", namespace: String? = nil) {
        self.index = index
        self.folder = folder
        self.databaseURL = databaseURL
        self.keyFile = keyFile
        self.namespace = namespace
    }

    var child: RunningChild? { process.withLock { $0 } }
    var isRunning: Bool { child?.isRunning ?? false }
    var log: String { child?.outputText ?? "" }
    var configPath: String { folder.path("k\(index)/config.yaml") }

    struct Site {
        var state: String
        var lease: String?
    }

    func writeConfig() throws {
        try FileManager.default.createDirectory(atPath: folder.path("k\(index)"), withIntermediateDirectories: true)
        try """
            sites_dir: \(folder.path("sites"))
            state_dir: \(folder.path("k\(index)/state"))
            socket: {path: \(folder.path("k\(index)/socket"))}
            vault: {key: {file: \(folder.path(keyFile))}}
            store:
              postgres:
                url: {env: SK_DATABASE_URL}
                lease: 3s

            """.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    var environment: [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": folder.path, "SK_DATABASE_URL": databaseURL]
    }

    func start() async throws {
        let executable = try #require(CLIRunner.executable).path
        // `ip netns exec` enters the namespace and executes the keeper in its place: signals reach the keeper.
        let command = namespace.map { (NetworkNamespace.ip, ["netns", "exec", $0, executable]) } ?? (executable, [])
        let child = try await startProgram(
            command.0, command.1 + ["run", "--config", configPath], environment: environment,
            directory: folder.path, standardError: .mergedWithOutput)
        child.closeInput()
        process.withLock { $0 = child }
    }

    func run(_ arguments: [String]) async throws -> CLIRunner.Output {
        CLIRunner.Output(try await runProgram(
            try #require(CLIRunner.executable).path, arguments + ["--config", configPath], environment: environment,
            directory: folder.path))
    }

    /// Each site's state and lease as `status --json` shows them; empty while the socket does not answer.
    func sites() async throws -> [String: Site] {
        guard let object = try await statusJSON(), let sites = object["sites"] as? [[String: Any]] else { return [:] }
        var found: [String: Site] = [:]
        for site in sites {
            guard let name = site["name"] as? String else { continue }
            found[name] = Site(state: site["state"] as? String ?? "", lease: site["lease"] as? String)
        }
        return found
    }

    /// `store.reachable` of `status --json`; nil while the socket does not answer.
    func storeReachable() async throws -> Bool? {
        (try await statusJSON()?["store"] as? [String: Any])?["reachable"] as? Bool
    }

    private func statusJSON() async throws -> [String: Any]? {
        let status = try await run(["status", "--json"])
        // 1: shown, and a site needs attention or waits for a person.
        guard status.status == 0 || status.status == 1 else { return nil }
        return try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
    }

    /// The lines of this keeper's log about `site`.
    func logLines(about site: String) -> [String] {
        log.split(separator: "\n").filter { $0.split(separator: " ").contains { $0 == "site=\(site)" } }.map(String.init)
    }

    /// The value of the site's cookie this keeper's socket serves; nil when it serves none.
    func cookie(_ site: String) async throws -> String? {
        let answer = try await run(["cookie", site])
        guard answer.status == 0, !answer.stderr.contains("nothing keeps") else { return nil }
        let pair = answer.stdout.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .first { $0.hasPrefix("fleet_\(site)=") }
        return pair.map { String($0.dropFirst("fleet_\(site)=".count)) }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
