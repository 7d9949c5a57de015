import Foundation
import Locking
internal import PostgresNIO
import Vault

/// A site's lease as this keeper won it: the fencing token its writes carry.
public struct SiteLease: Sendable, Hashable, CustomStringConvertible {
    /// The site's name.
    public let site: String
    /// The site's keyed-hash id (the lease row's key, the session row's key).
    public let siteID: [UInt8]
    /// Incremented at every takeover; a write is conditioned on it.
    public let epoch: Int64
    /// When the lease ends on the database's clock, as of the statement that took or renewed it.
    public let validUntil: Date
    /// When this keeper must stop acting on the site unless a renewal succeeds first: the moment the
    /// statement that took or renewed the lease was sent, plus the lease, less a margin for clock rate
    /// differences. Measured on this host's monotonic clock, so a slow answer or a paused process never
    /// extends it: a keeper stopped past its lease finds the deadline gone when it wakes up.
    public let deadline: ContinuousClock.Instant

    public var description: String { "lease of '\(site)' at epoch \(epoch)" }

    /// Whether the lease may still be acted on at `now`.
    public func isValid(at now: ContinuousClock.Instant = .now) -> Bool { now < deadline }
}

/// A site nobody holds: its lease expired or was released.
public struct AvailableSite: Sendable, Hashable {
    public let site: String
    /// How long ago its lease ended, on the database's clock.
    public let expiredFor: Duration
}

/// What one ``SiteLeases/renewAll()`` found.
public struct LeaseRenewal: Sendable {
    /// Every lease this keeper still holds, renewed.
    public var held: [SiteLease]
    /// Sites this keeper held before and holds no longer (its lease expired before the renewal, or another
    /// keeper took it over): stop their runs at once.
    public var lost: [String]
    /// Keepers of the fleet whose heartbeat is current, this one included.
    public var liveKeepers: Int
    /// Sites this keeper knows (``SiteLeases/know(sites:)``) whose lease ended within the last day and
    /// that nobody holds.
    public var available: [AvailableSite]
}

/// How many leases a keeper should hold: its fair share of the sites among the live keepers.
public struct LeasePlan: Sendable, Hashable {
    /// ceil(sites / live keepers).
    public var share: Int
    /// Free sites to try to take now (up to the share).
    public var acquire: Int
    /// Held leases to give back (above the share), so that keepers that joined get theirs.
    public var release: Int

    /// The plan for a keeper holding `held` of `sites` sites while `liveKeepers` keepers are alive.
    /// Sites whose lease has been free for longer than a renewal period are taken whatever the share (see
    /// docs/FLEET.md): the share only keeps the first keeper from taking everything at the start.
    public static func plan(held: Int, sites: Int, liveKeepers: Int) -> LeasePlan {
        let keepers = max(liveKeepers, 1)
        let share = sites == 0 ? 0 : (sites + keepers - 1) / keepers
        return LeasePlan(share: share, acquire: max(0, share - held), release: max(0, held - share))
    }
}

/// Per-site leases with fencing (SPEC section 11, docs/FLEET.md "Leases"). One row per site in
/// `sessionkeeper_leases`: the site's keyed-hash id, the holder's keeper id, the epoch and `valid_until`
/// on the database's clock. All times are the database's (`now()`), so keepers' clocks never matter.
///
/// - ``acquire(_:)`` takes a free, expired or own lease; a takeover increments the epoch.
/// - ``renewAll()`` renews every lease this keeper holds, and its heartbeat, in one statement.
/// - ``release(_:)`` ends a lease early (shutdown, rebalancing).
/// - Writes are fenced elsewhere (``FencedSessionStore``): a statement conditioned on holder and epoch.
///
/// A view over the store; cheap to create.
public struct SiteLeases: Sendable {
    let store: PostgresStore

    /// How much earlier than the database a keeper considers its lease over (``SiteLease/deadline``).
    static func safetyMargin(for lease: Duration) -> Duration { min(.seconds(1), lease / 10) }

    /// This keeper's id (the `holder` of its lease rows).
    public var keeperID: String { store.keeperID }
    /// How long a lease lasts.
    public var duration: Duration { store.settings.lease }
    /// How often ``renewAll()`` should run: a third of the lease.
    public var renewalPeriod: Duration { store.settings.renewalPeriod }

    /// Makes `sites` known, so that leases found by id in ``renewAll()`` map back to names.
    public func know(sites: [String]) throws(PostgresStoreError) {
        let keys = try store.keys()
        store.leaseBook.withLock { book in
            for site in sites { book.names[Self.idKey(keys.itemID(of: Self.item(site)))] = site }
        }
    }

    /// The leases this keeper holds as of its last statement (none may be valid any more: check
    /// ``SiteLease/isValid(at:)``).
    public var held: [SiteLease] {
        store.leaseBook.withLock { Array($0.held.values) }.sorted { $0.site < $1.site }
    }

    /// The lease of `site` if this keeper holds it and its deadline has not passed.
    public func lease(of site: String) -> SiteLease? {
        store.leaseBook.withLock { $0.held[site] }.flatMap { $0.isValid() ? $0 : nil }
    }

    /// Takes `site`'s lease when nobody holds it, its lease expired, or this keeper holds it (then only its
    /// `valid_until` moves). Returns nil when another keeper holds it.
    public func acquire(_ site: String) async throws(PostgresStoreError) -> SiteLease? {
        let id = try store.keys().itemID(of: Self.item(site))
        try know(sites: [site])
        let milliseconds = duration.wholeMilliseconds
        let me = keeperID
        let sent = ContinuousClock.now
        let row = try await store.perform("taking the lease of site '\(site)'", timeout: renewalPeriod) { [client = store.client] in
            var found: (Int64, Date)?
            let rows = try await client.query(
                """
                INSERT INTO sessionkeeper_leases AS l (site_id, holder, epoch, valid_until)
                VALUES (\(ByteBuffer(bytes: id)), \(me), 1, now() + \(milliseconds) * interval '1 millisecond')
                ON CONFLICT (site_id) DO UPDATE SET
                    holder = EXCLUDED.holder,
                    epoch = CASE WHEN l.holder = EXCLUDED.holder AND l.valid_until > now() THEN l.epoch ELSE l.epoch + 1 END,
                    valid_until = EXCLUDED.valid_until
                WHERE l.valid_until <= now() OR l.holder = EXCLUDED.holder
                RETURNING epoch, valid_until
                """)
            for try await row in rows.decode((Int64, Date).self) { found = row }
            return found
        }
        guard let row else {
            store.leaseBook.withLock { _ = $0.held.removeValue(forKey: site) }
            return nil
        }
        let (epoch, validUntil) = row
        let lease = SiteLease(
            site: site, siteID: id, epoch: epoch, validUntil: validUntil, deadline: sent + duration - Self.safetyMargin(for: duration))
        store.leaseBook.withLock { $0.held[site] = lease }
        return lease
    }

    /// Takes at most `limit` of `sites` that nobody holds (no lease row, or an expired one), chosen at
    /// random so that keepers starting together take different ones; one statement.
    public func acquireAvailable(among sites: [String], limit: Int) async throws(PostgresStoreError) -> [SiteLease] {
        guard limit > 0, !sites.isEmpty else { return [] }
        let keys = try store.keys()
        try know(sites: sites)
        var byID: [String: String] = [:]
        for site in Set(sites) { byID[Self.idKey(keys.itemID(of: Self.item(site)))] = site }
        let ids = Set(sites).map { ByteBuffer(bytes: keys.itemID(of: Self.item($0))) }
        let milliseconds = duration.wholeMilliseconds
        let me = keeperID
        let sent = ContinuousClock.now
        let rows = try await store.perform("taking free leases", timeout: renewalPeriod) { [client = store.client] in
            var found: [([UInt8], Int64, Date)] = []
            let rows = try await client.query(
                """
                WITH candidates AS (
                    SELECT c.site_id FROM unnest(\(ids)::bytea[]) AS c(site_id)
                    LEFT JOIN sessionkeeper_leases l ON l.site_id = c.site_id
                    WHERE l.site_id IS NULL OR l.valid_until <= now()
                    ORDER BY random() LIMIT \(limit))
                INSERT INTO sessionkeeper_leases AS l (site_id, holder, epoch, valid_until)
                SELECT site_id, \(me), 1, now() + \(milliseconds) * interval '1 millisecond' FROM candidates
                ON CONFLICT (site_id) DO UPDATE SET holder = EXCLUDED.holder, epoch = l.epoch + 1, valid_until = EXCLUDED.valid_until
                WHERE l.valid_until <= now()
                RETURNING site_id, epoch, valid_until
                """)
            for try await (id, epoch, validUntil) in rows.decode((ByteBuffer, Int64, Date).self) {
                found.append((Array(id.readableBytesView), epoch, validUntil))
            }
            return found
        }
        let deadline = sent + duration - Self.safetyMargin(for: duration)
        let leases = rows.compactMap { id, epoch, validUntil -> SiteLease? in
            guard let site = byID[Self.idKey(id)] else { return nil }
            return SiteLease(site: site, siteID: id, epoch: epoch, validUntil: validUntil, deadline: deadline)
        }
        store.leaseBook.withLock { book in
            for lease in leases { book.held[lease.site] = lease }
        }
        return leases.sorted { $0.site < $1.site }
    }

    /// Renews every lease this keeper holds that has not expired, beats this keeper's heartbeat, counts the
    /// live keepers and lists the known sites nobody holds, all in ONE statement, whatever the number of
    /// sites: run it every ``renewalPeriod``. A lease that expired before the renewal is not renewed (another
    /// keeper may have it, or may take it any moment): it is reported lost, to be taken again, under a new
    /// epoch, by ``acquire(_:)``.
    public func renewAll() async throws(PostgresStoreError) -> LeaseRenewal {
        let milliseconds = duration.wholeMilliseconds
        let me = keeperID
        let host = ProcessInfo.processInfo.hostName
        let pid = Int32(ProcessInfo.processInfo.processIdentifier)
        let sent = ContinuousClock.now
        let rows = try await store.perform("renewing leases", timeout: renewalPeriod) { [client = store.client] in
            var found: [(Int32, ByteBuffer?, Int64?, Date?, Int64?)] = []
            let rows = try await client.query(
                """
                WITH heartbeat AS (
                    INSERT INTO sessionkeeper_keepers (keeper_id, host, pid, seen_until)
                    VALUES (\(me), \(host), \(pid), now() + \(milliseconds) * interval '1 millisecond')
                    ON CONFLICT (keeper_id) DO UPDATE SET seen_until = EXCLUDED.seen_until
                    RETURNING keeper_id),
                renewed AS (
                    UPDATE sessionkeeper_leases SET valid_until = now() + \(milliseconds) * interval '1 millisecond'
                    WHERE holder = \(me) AND valid_until > now()
                    RETURNING site_id, epoch, valid_until)
                SELECT 1, site_id, epoch, valid_until, NULL::bigint FROM renewed
                UNION ALL
                SELECT 2, site_id, epoch, valid_until, (extract(epoch FROM now() - valid_until) * 1000)::bigint
                    FROM sessionkeeper_leases WHERE valid_until <= now() AND valid_until > now() - interval '1 day'
                UNION ALL
                SELECT 3, NULL, NULL, NULL,
                    (SELECT count(*) FROM sessionkeeper_keepers WHERE seen_until > now() AND keeper_id <> \(me))
                    + (SELECT count(*) FROM heartbeat)
                """)
            for try await row in rows.decode((Int32, ByteBuffer?, Int64?, Date?, Int64?).self) { found.append(row) }
            return found
        }
        let deadline = sent + duration - Self.safetyMargin(for: duration)
        return store.leaseBook.withLock { book -> LeaseRenewal in
            var held: [String: SiteLease] = [:]
            var available: [AvailableSite] = []
            var liveKeepers = 1
            for (part, idBytes, epoch, validUntil, number) in rows {
                let id = idBytes.map { Array($0.readableBytesView) }
                switch part {
                case 1:
                    guard let id, let epoch, let validUntil, let site = book.names[Self.idKey(id)] else { continue }
                    held[site] = SiteLease(site: site, siteID: id, epoch: epoch, validUntil: validUntil, deadline: deadline)
                case 2:
                    guard let id, let site = book.names[Self.idKey(id)] else { continue }
                    available.append(AvailableSite(site: site, expiredFor: .milliseconds(max(0, number ?? 0))))
                default:
                    liveKeepers = max(1, Int(number ?? 1))
                }
            }
            let lost = book.held.keys.filter { held[$0] == nil }.sorted()
            book.held = held
            return LeaseRenewal(
                held: held.values.sorted { $0.site < $1.site }, lost: lost, liveKeepers: liveKeepers,
                available: available.sorted { $0.site < $1.site })
        }
    }

    /// Ends `lease` now (the row stays, expired, so the next holder takes it under epoch + 1). Returns
    /// false when the lease was no longer this keeper's under that epoch.
    @discardableResult
    public func release(_ lease: SiteLease) async throws(PostgresStoreError) -> Bool {
        let me = keeperID
        store.leaseBook.withLock { book in
            if book.held[lease.site]?.epoch == lease.epoch { book.held.removeValue(forKey: lease.site) }
        }
        return try await store.perform("releasing the lease of site '\(lease.site)'", timeout: renewalPeriod) { [client = store.client] in
            var released = false
            let rows = try await client.query(
                """
                UPDATE sessionkeeper_leases SET valid_until = now()
                WHERE site_id = \(ByteBuffer(bytes: lease.siteID)) AND holder = \(me) AND epoch = \(lease.epoch) AND valid_until > now()
                RETURNING true
                """)
            for try await _ in rows.decode(Bool.self) { released = true }
            return released
        }
    }

    /// The number of keepers whose heartbeat is current, this one included once registered.
    public func liveKeepers() async throws(PostgresStoreError) -> Int {
        try await store.perform("counting keepers", timeout: renewalPeriod) { [client = store.client] in
            var count = 0
            for try await value in try await client.query(
                "SELECT count(*) FROM sessionkeeper_keepers WHERE seen_until > now()"
            ).decode(Int64.self) {
                count = Int(value)
            }
            return count
        }
    }

    /// Who holds `site`'s lease now, by the database: the holder's keeper id, the epoch and whether it is
    /// still valid; nil when the site was never leased.
    public func holder(of site: String) async throws(PostgresStoreError) -> (keeperID: String, epoch: Int64, valid: Bool)? {
        let id = try store.keys().itemID(of: Self.item(site))
        return try await store.perform("reading the lease of site '\(site)'", timeout: renewalPeriod) { [client = store.client] in
            var found: (String, Int64, Bool)?
            for try await row in try await client.query(
                "SELECT holder, epoch, valid_until > now() FROM sessionkeeper_leases WHERE site_id = \(ByteBuffer(bytes: id))"
            ).decode((String, Int64, Bool).self) {
                found = row
            }
            return found.map { (keeperID: $0.0, epoch: $0.1, valid: $0.2) }
        }
    }

    /// Joins the fleet: the keeper's row with a first heartbeat; rows of keepers gone for a day, and lease
    /// rows expired for a week (sites no longer configured), are cleared on the way.
    func register() async throws(PostgresStoreError) {
        let milliseconds = duration.wholeMilliseconds
        let me = keeperID
        let host = ProcessInfo.processInfo.hostName
        let pid = Int32(ProcessInfo.processInfo.processIdentifier)
        try await store.perform("joining the fleet") { [client = store.client] in
            try await client.exhaust(
                """
                WITH gone AS (DELETE FROM sessionkeeper_keepers WHERE seen_until < now() - interval '1 day'),
                stale AS (DELETE FROM sessionkeeper_leases WHERE valid_until < now() - interval '7 days')
                INSERT INTO sessionkeeper_keepers (keeper_id, host, pid, seen_until)
                VALUES (\(me), \(host), \(pid), now() + \(milliseconds) * interval '1 millisecond')
                ON CONFLICT (keeper_id) DO UPDATE SET seen_until = EXCLUDED.seen_until
                """)
        }
    }

    /// Leaves the fleet: every lease this keeper holds ends now and its keeper row goes.
    func leaveFleet() async throws(PostgresStoreError) {
        let me = keeperID
        store.leaseBook.withLock { $0.held = [:] }
        try await store.perform("leaving the fleet", timeout: renewalPeriod) { [client = store.client] in
            try await client.exhaust(
                """
                WITH released AS (UPDATE sessionkeeper_leases SET valid_until = now() WHERE holder = \(me) AND valid_until > now())
                DELETE FROM sessionkeeper_keepers WHERE keeper_id = \(me)
                """)
        }
    }

    static func item(_ site: String) -> ItemReference { ItemReference(.siteState, site) }

    static func idKey(_ id: [UInt8]) -> String { id.map { String(format: "%02x", $0) }.joined() }
}

/// What this keeper knows of its leases between statements.
struct LeaseBook {
    /// The leases held as of the last statement, by site.
    var held: [String: SiteLease] = [:]
    /// Site names by their id's hex, for rows the database returns by id.
    var names: [String: String] = [:]
}
