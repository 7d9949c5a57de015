import Foundation
import Platform
import SocketAPI
import Testing
import TestSupport

/// Group names of `access.groups` are turned into gids off the event loop (an NSS lookup may ask LDAP and
/// take seconds), once, and again on every reload.
@Suite(.serialized) struct GroupLookupTests {
    @Test func aSlowGroupLookupDelaysNoOtherClientAndIsMadeOnce() async throws {
        try await SocketWorld.withWorld { world in
            let grouped = try world.site("grouped", extra: "access: {groups: [slowgroup]}")
            await world.keeper.apply([try world.site(), grouped])
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "demo")?.status.phase == .valid })
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "grouped")?.status.phase == .valid })
            // A directory service that takes twelve seconds to answer: "slowgroup" is gid 100.
            let lookups = SocketWorld.Counter()
            let access = AccessControl(daemonUID: Syscall.userID, allowUIDs: []) { name in
                lookups.increment()
                Thread.sleep(forTimeInterval: 12)
                return name == "slowgroup" ? 100 : nil
            }
            try await world.serving(world.socketServer(access: access)) {
                async let member = world.curl("/v1/sites/grouped", asNobody: true, groups: [100])
                try await Task.sleep(for: .milliseconds(300))
                // While the lookup runs, everyone else is served: an event loop blocked by it would answer only
                // once it ended, 11.7 s from now (alone this takes milliseconds; the bound leaves room for a
                // machine loaded by the whole suite in parallel, where a curl process alone took 4 s).
                let (status, seconds) = try await ConnectionLimitsTests.timedCookie(world)
                #expect(status == 200)
                #expect(seconds < 8, "the cookie took \(seconds) s during the lookup")
                #expect(try await member.status == 200)
                #expect(lookups.count == 1)

                // Kept: the next request looks nothing up.
                #expect(try await world.curl("/v1/sites/grouped", asNobody: true, groups: [100]).status == 200)
                #expect(try await world.curl("/v1/sites/grouped", asNobody: true).status == 404)
                #expect(lookups.count == 1)
                // A reload looks every name up again (a group created or renumbered since counts).
                await access.resolveGroups(of: [grouped])
                #expect(lookups.count == 2)
            }
        }
    }
}
