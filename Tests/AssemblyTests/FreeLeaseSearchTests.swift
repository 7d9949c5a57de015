@testable import Assembly
import Testing

/// A keeper below its share looks for free leases once, not every renewal period, until the fleet changes.
@Suite struct FreeLeaseSearchTests {
    @Test func aFruitlessLookIsNotRepeatedUntilSomethingChanges() {
        var search = FreeLeaseSearch()
        var looks: [Bool] = []
        looks.append(search.shouldLook(wanted: 1, sites: 100, liveKeepers: 3, freeSeen: false))
        search.found(0, of: 1)
        looks.append(search.shouldLook(wanted: 1, sites: 100, liveKeepers: 3, freeSeen: false))  // nothing changed
        looks.append(search.shouldLook(wanted: 1, sites: 100, liveKeepers: 3, freeSeen: true))  // a lease seen free
        search.found(0, of: 1)
        looks.append(search.shouldLook(wanted: 1, sites: 101, liveKeepers: 3, freeSeen: false))  // a site added
        search.found(0, of: 1)
        looks.append(search.shouldLook(wanted: 2, sites: 101, liveKeepers: 2, freeSeen: false))  // a keeper left
        search.found(2, of: 2)
        looks.append(search.shouldLook(wanted: 1, sites: 101, liveKeepers: 2, freeSeen: false))  // the last look found all
        looks.append(search.shouldLook(wanted: 0, sites: 101, liveKeepers: 2, freeSeen: true))  // at its share
        #expect(looks == [true, false, true, true, true, true, false])
    }
}
