import Foundation
import Platform
import TestSupport
import Testing

extension FleetCLITests {
    /// Fleet mode with a keeper cut off from the database by the network (SPEC section 11, issue 28): three keepers
    /// on one PostgreSQL, the third in its own network namespace, reaching the database and the site server over a
    /// veth pair. The link is taken down on the test's side, as a pulled cable: nothing answers, nothing is
    /// refused. The cut keeper loses its leases by its own deadline and keeps serving what it holds; the others take
    /// its sites over within lease + two renewal periods of the cut; no site is logged in again or twice at once;
    /// once the link is back the cut keeper rejoins by itself and the leases spread again.
    ///
    /// Needs root (a namespace and a veth pair) and iproute2's `ip`; skipped otherwise. A test of ``FleetCLITests``
    /// (its suite is serialized): two fleets of three keepers at once would load 2 cores past the suite's timings.
    @Test(.enabled(if: NetworkNamespace.available, "needs root and iproute2's ip"))
    func aKeeperCutOffFromTheDatabaseLosesItsLeasesAndTheOthersTakeOverWithoutASecondLogin() async throws {
        let namespace = try await NetworkNamespace.create()
        var database: PostgresServer?
        var site: PythonServer?
        var world: FleetWorld?
        let folder = try TemporaryFolder()
        var failure: (any Error)?
        do {
            // The database and the site listen on the test's end of the link; the two keepers outside the
            // namespace reach the database on its Unix socket, the third over TCP through the link.
            let server = try await PostgresServer.start(settings: ["listen_addresses": "'\(namespace.hostAddress)'"])
            database = server
            try await server.trust(network: namespace.network)
            let script = Bundle.module.url(forResource: "fleet_site", withExtension: "py", subdirectory: "Fixtures")?.path ?? ""
            let server2 = try await PythonServer.start(script: script, arguments: [namespace.hostAddress])
            site = server2
            world = try await FleetWorld.make(
                database: server, folder: folder, site: server2, siteAddress: namespace.hostAddress,
                // The test's database has no TLS; at the namespace's address (not a loopback one) sslmode would
                // default to verify-full, so the URL says what this test's link is.
                namespaced: (
                    index: 3, namespace: namespace.name,
                    databaseURL: "postgres://\(server.user)@\(namespace.hostAddress):\(server.port)/DATABASE?connect_timeout=2&sslmode=disable"
                ))
            try await exercisePartition(try #require(world), namespace)
        } catch {
            failure = error
        }
        await world?.stopAll()
        await site?.stop()
        await database?.cleanUp()
        await namespace.remove()
        folder.cleanUp()
        if let failure { throw failure }
    }

    private func exercisePartition(_ world: FleetWorld, _ namespace: NetworkNamespace) async throws {
        for keeper in world.keepers { try await keeper.start() }
        let cut = world.keepers[2]
        let others = Array(world.keepers.prefix(2))
        let spread = try await waitUntil(.seconds(60)) {
            for keeper in world.keepers where try await keeper.sites().values.filter({ $0.state == "valid" }).count < FleetCLITests.siteCount {
                return false
            }
            let held = try await world.heldCounts()
            return held.reduce(0, +) == FleetCLITests.siteCount && held.allSatisfy { $0 > 0 }
        }
        let settled = try await world.heldCounts()
        #expect(spread, "the fleet did not settle with a share for each keeper: \(settled) \(world.logs())")
        let cutHeld = try await cut.sites().filter { $0.value.lease == "held" }.map(\.key).sorted()
        try #require(!cutHeld.isEmpty, "the namespaced keeper holds no lease")
        let served = try await cut.cookie(cutHeld[0])
        let before = try await world.stats()
        let offset = cut.log.count

        // The cable pulled.
        try await namespace.cut()
        let cutAt = ContinuousClock.now
        let takenOver = try await waitUntil(.seconds(20)) {
            let heldByOthers = try await others.asyncMap { try await $0.sites().filter { $0.value.lease == "held" }.map(\.key) }.joined()
            return Set(cutHeld).isSubset(of: Set(heldByOthers))
        }
        let takeover = ContinuousClock.now - cutAt
        print("link cut to takeover of the cut keeper's \(cutHeld.count) sites: \(takeover.wholeMilliseconds) ms")
        // A renewal sent just before the cut may still have reached the database, so a lease can run a whole
        // `lease` after the cut; a site free for longer than a renewal period is taken at the next renewal after
        // that; and each look of the test asks two keepers through the CLI, which takes a second under the
        // suite's load (5.9 s seen once in CI, 3.0 to 4.3 s otherwise).
        #expect(
            takenOver && takeover <= FleetCLITests.lease + FleetCLITests.renewal * 2 + .seconds(2), "taken over after \(takeover)")

        // The cut keeper: its leases gone by its own deadline, the database reported, its sessions still served.
        let cutSites = try await cut.sites()
        #expect(cutSites.values.allSatisfy { $0.lease != "held" }, "the cut keeper still acts on a site")
        #expect(cutSites.values.filter { $0.state == "valid" }.count == FleetCLITests.siteCount, "the cut keeper stopped serving")
        #expect(try await cut.storeReachable() == false)
        #expect(try await cut.cookie(cutHeld[0]) == served)
        let cutLog = String(cut.log.dropFirst(offset))
        #expect(cutLog.contains("store unreachable;"), "\(cutLog.suffix(2000))")
        for name in cutHeld {
            #expect(cut.logLines(about: name).contains { $0.contains("lease lost") }, "site \(name): no lease lost logged")
        }
        let after = try await world.stats()
        #expect(after.logins == before.logins, "a site was logged in again after the cut")
        #expect(after.overlaps.isEmpty, "overlapping logins: \(after.overlaps)")

        // The cable back: the cut keeper rejoins by itself and takes its share again.
        try await namespace.restore()
        let rejoined = try await waitUntil(.seconds(30)) {
            guard try await cut.storeReachable() == true else { return false }
            let held = try await world.heldCounts()
            return held.reduce(0, +) == FleetCLITests.siteCount && held.allSatisfy { $0 > 0 }
        }
        let shares = try await world.heldCounts()
        #expect(rejoined, "the cut keeper did not rejoin: \(shares) \(cut.log.suffix(2000))")
        let final = try await world.stats()
        #expect(final.logins == before.logins, "a site was logged in again after the link came back")
        #expect(final.overlaps.isEmpty)
    }
}

/// A network namespace joined to the test's by a veth pair on a random 10.x.y.0/30: `hostAddress` (.1) on
/// the test's side, `innerAddress` (.2) inside. ``cut()`` takes the test's end down, so packets from inside
/// are dropped without an answer, as when a cable is pulled; ``restore()`` brings it up again.
final class NetworkNamespace: Sendable {
    static let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/ip"
    static var available: Bool { Syscall.userID == 0 && FileManager.default.isExecutableFile(atPath: ip) }

    let name: String
    let hostLink: String
    let hostAddress: String
    let innerAddress: String
    /// The link's network, for pg_hba.conf.
    let network: String

    private init(name: String, hostLink: String, prefix: String, base: Int) {
        self.name = name
        self.hostLink = hostLink
        hostAddress = "\(prefix).\(base + 1)"
        innerAddress = "\(prefix).\(base + 2)"
        network = "\(prefix).\(base)/30"
    }

    static func create() async throws -> NetworkNamespace {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let namespace = NetworkNamespace(
            name: "sk-test-\(tag)", hostLink: "skh\(tag)", prefix: "10.\(Int.random(in: 200...249)).\(Int.random(in: 0...255))",
            base: Int.random(in: 0...63) * 4)
        let inner = "skn\(tag)"
        do {
            try await run(["netns", "add", namespace.name])
            try await run(["link", "add", namespace.hostLink, "type", "veth", "peer", "name", inner])
            try await run(["link", "set", inner, "netns", namespace.name])
            try await run(["addr", "add", namespace.hostAddress + "/30", "dev", namespace.hostLink])
            try await run(["link", "set", namespace.hostLink, "up"])
            try await run(["-n", namespace.name, "addr", "add", namespace.innerAddress + "/30", "dev", inner])
            try await run(["-n", namespace.name, "link", "set", inner, "up"])
            try await run(["-n", namespace.name, "link", "set", "lo", "up"])
        } catch {
            await namespace.remove()
            throw error
        }
        return namespace
    }

    func cut() async throws { try await Self.run(["link", "set", hostLink, "down"]) }

    func restore() async throws { try await Self.run(["link", "set", hostLink, "up"]) }

    /// Deletes the namespace, and with it the veth pair.
    func remove() async {
        _ = try? await runProgram(Self.ip, ["link", "del", hostLink])
        _ = try? await runProgram(Self.ip, ["netns", "del", name])
    }

    private static func run(_ arguments: [String]) async throws {
        let result = try await runProgram(ip, arguments)
        guard result.status == 0 else {
            throw NetworkNamespaceError(description: "ip \(arguments.joined(separator: " ")): \(result.errorText)")
        }
    }
}

struct NetworkNamespaceError: Error, CustomStringConvertible {
    var description: String
}
